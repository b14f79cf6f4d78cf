"""The runner: boot an image under QEMU and report the guest's exit status."""
