"""`ukl run -v HOST_DIR:GUEST_DIR[:ro]`: a host folder shared with the guest.

QEMU exports the folder over virtio-9p (`-fsdev local` and a
virtio-9p-pci device, which Debian's QEMU has and which works under TCG);
the guest's init mounts it with `mount -t 9p -o trans=virtio,version=9p2000.L`.
virtiofs would be faster but needs the virtiofsd daemon and vhost-user
shared memory, which this host setup does not have.

The folder is used as it is: never made, emptied or changed by the host
side; what the guest writes lands in it as files of the user who runs
QEMU (security_model=none: no ownership or mode mapping, no root needed).
With `:ro` QEMU itself refuses writes (readonly=on) and the guest mounts
it read-only.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ukl.common.errors import UsageError
from ukl.image import disk

# Built in (=y): the images carry no kernel modules. 9P_FS also needs
# CONFIG_NETWORK_FILESYSTEMS, the menu it sits in.
KERNEL_NEEDS = ("CONFIG_VIRTIO_PCI", "CONFIG_NET_9P", "CONFIG_NET_9P_VIRTIO", "CONFIG_9P_FS")


@dataclass(frozen=True)
class ShareSpec:
    host: Path
    guest_path: str
    read_only: bool


def parse(spec: str) -> ShareSpec:
    """HOST_DIR:GUEST_DIR[:ro|:rw]; HOST_DIR must be an existing directory."""
    parts = spec.split(":")
    mode = parts.pop() if len(parts) == 3 else "rw"
    if len(parts) != 2 or not parts[0] or mode not in ("ro", "rw"):
        raise UsageError(f"-v {spec}: use HOST_DIR:GUEST_DIR[:ro], e.g. -v ./site:/srv "
                         "(HOST_DIR cannot contain ':')")
    problem = disk.guest_path_problem(parts[1])
    if problem:
        raise UsageError(f"-v {spec}: GUEST_DIR {problem}")
    host = Path(parts[0]).expanduser()
    if not host.is_dir():
        what = "is not a directory" if host.exists() else "does not exist"
        raise UsageError(f"-v {spec}: host folder {host} {what}")
    return ShareSpec(host.resolve(), parts[1], mode == "ro")
