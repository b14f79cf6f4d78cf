"""The image layer: initramfs (busybox + init + files) and image directories."""
