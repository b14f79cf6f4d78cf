"""`ukl profile`: an exact, whole-system, per-function profile of a guest,
from the ukl_profile QEMU plugin (qemu/plugins/ukl_profile.c) under
-icount. In a UKL image the application and the kernel are one vmlinux
with one symbol table, so one profile shows both; for an ordinary process
on another kernel, the program's own ELF gives its functions.

symbols: the function table the plugin maps addresses with; data: the
plugin's output; analysis: flat profile, call tree, folded stacks; flame:
the flame graph; run: boot an image under the plugin and write it all.
"""
