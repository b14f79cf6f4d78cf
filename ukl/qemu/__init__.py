"""QEMU: the command line for an image, and booting it to the guest's exit status."""
