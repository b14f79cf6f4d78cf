#!/bin/busybox sh
# PID 1 of every ukl image (generated from ukl/image/init.sh).
#
# Mounts the basics, starts the image's helper processes, runs the program
# with the arguments the kernel passed after `--` on its command line, and
# hands the program's exit status to the host.

/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root TERM=vt100
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
# POSIX shared memory (shm_open), as on any Linux system.
mkdir -p /dev/shm
mount -t tmpfs shm /dev/shm
ip link set lo up
# QEMU user networking (ukl run -p): fixed addresses, no DHCP client needed.
if [ -e /sys/class/net/eth0 ]; then
	ip addr add 10.0.2.15/24 dev eth0
	ip link set eth0 up
	ip route add default via 10.0.2.2
fi

# Defines UKL_PROGRAM, UKL_DEFAULT_ARGS (shell-quoted), UKL_RUNAS (empty,
# or ukl-runas and the user the program runs as) and ukl_start_helpers.
. /etc/ukl/image.conf
if [ $# -eq 0 ] && [ -n "$UKL_DEFAULT_ARGS" ]; then
	eval "set -- $UKL_DEFAULT_ARGS"
fi

ukl_report() {
	# The full status goes in this line, which the host reads from the
	# console. QEMU's isa-debug-exit device then ends the VM with exit code
	# (value << 1) | 1; only 7 bits of the value survive the host's 8-bit
	# exit status, so it serves as a cross-check that the guest got here.
	echo "ukl-init: exit status $1"
	printf "\\$(printf %03o $(($1 & 127)))" |
		dd of=/dev/port bs=1 seek=244 count=1 2>/dev/null
	# Without the debug-exit device, stop the machine anyway (-no-reboot).
	reboot -f
}

# A UKL_NSS kernel runs system calls on the application's own stack, so its
# address space must be the only one: the program replaces init (the kernel
# then reports its exit as init's, which the host reads), and no helper may
# run beside it (its exec would fail with EBUSY).
if [ -e /sys/module/ukl/parameters/nss_pgd_syncs ] && [ -n "$UKL_PROGRAM" ]; then
	echo "ukl-init: UKL_NSS: $UKL_PROGRAM replaces init; no helper processes"
	exec $UKL_RUNAS "$UKL_PROGRAM" "$@"
fi

ukl_start_helpers

if [ -z "$UKL_PROGRAM" ]; then
	# No program: an interactive shell on the console.
	setsid cttyhack sh
	ukl_report $?
fi
$UKL_RUNAS "$UKL_PROGRAM" "$@"
ukl_report $?
