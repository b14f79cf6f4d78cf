#!/bin/busybox sh
# PID 1 of every ukl image (generated from ukl/image/init.sh).
#
# Mounts the basics, starts the image's helper processes, runs the program
# with this run's arguments and environment (/etc/ukl/run.conf, appended by
# `ukl run`; else the image's defaults, or what the kernel passed after `--`
# on its command line), and hands the program's exit status to the host.

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

# Defines UKL_PROGRAM, UKL_DEFAULT_ARGS and UKL_DEFAULT_ENV (shell-quoted
# words), UKL_RUNAS (empty, or ukl-runas and the user the program runs as)
# and ukl_start_helpers.
. /etc/ukl/image.conf
# This run's arguments (UKL_RUN_HAS_ARGS, UKL_RUN_ARGS) and environment
# (UKL_RUN_ENV), never on the kernel command line, whose length and
# quoting would limit them (ukl/image/runargs.py).
UKL_RUN_ENV=
if [ -e /etc/ukl/run.conf ]; then
	. /etc/ukl/run.conf
fi
if [ -n "$UKL_RUN_HAS_ARGS" ]; then
	eval "set -- $UKL_RUN_ARGS"
elif [ $# -eq 0 ] && [ -n "$UKL_DEFAULT_ARGS" ]; then
	eval "set -- $UKL_DEFAULT_ARGS"
fi
# The run's NAME=VALUE words after the image's: env(1) applies them in
# order, so a run overrides a default.
UKL_ENV="$UKL_DEFAULT_ENV $UKL_RUN_ENV"

# A failure init cannot recover from: said on the console, where the host
# finds it (ukl/qemu/run.py), and the machine stops without a status.
ukl_fail() {
	echo "ukl-init: error: $*"
	sync
	reboot -f
}

# `ukl run --disk`: UKL_RUN_MOUNTS holds DEVICE DIRECTORY pairs of ext4
# disks, mounted before anything else runs and written back before the
# status is reported (the debug-exit device ends QEMU at once). A disk that
# does not mount stops the run: the program would otherwise write what it
# means to keep into the initramfs, and lose it.
ukl_mount_disks() {
	eval "set -- $UKL_RUN_MOUNTS"
	while [ $# -ge 2 ]; do
		mkdir -p "$2"
		ukl_err=$(mount -t ext4 "$1" "$2" 2>&1) ||
			ukl_fail "cannot mount the disk $1 (ext4) at $2: $ukl_err"
		shift 2
	done
}
ukl_unmount_disks() {
	[ -n "$UKL_RUN_MOUNTS" ] || return 0
	sync
	eval "set -- $UKL_RUN_MOUNTS"
	while [ $# -ge 2 ]; do
		umount "$2" 2>/dev/null || mount -o remount,ro "$2"
		shift 2
	done
}
if [ -n "$UKL_RUN_MOUNTS" ]; then
	ukl_mount_disks
fi

# `ukl run -v`: UKL_RUN_SHARES holds TAG DIRECTORY MODE triples (MODE rw or
# ro) of host folders exported by QEMU over virtio-9p; like a disk, one
# that does not mount stops the run.
ukl_mount_shares() {
	eval "set -- $UKL_RUN_SHARES"
	while [ $# -ge 3 ]; do
		mkdir -p "$2"
		ukl_err=$(mount -t 9p -o "trans=virtio,version=9p2000.L,$3" "$1" "$2" 2>&1) ||
			ukl_fail "cannot mount the shared folder $1 (9p) at $2: $ukl_err"
		shift 3
	done
}
if [ -n "$UKL_RUN_SHARES" ]; then
	ukl_mount_shares
fi

# Start the program with its arguments. Its environment goes through env(1)
# rather than `export` so that it reaches the program alone: a PATH or IFS
# of the user's never changes how this script runs.
ukl_exec_program() {
	set -- $UKL_RUNAS "$UKL_PROGRAM" "$@"
	case "$UKL_ENV" in
	*[!\ ]*) eval "set -- $UKL_ENV \"\$@\""; exec env "$@" ;;
	*) exec "$@" ;;
	esac
}

ukl_report() {
	ukl_unmount_disks
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
	ukl_exec_program "$@"
fi

ukl_start_helpers

if [ -z "$UKL_PROGRAM" ]; then
	# No program: an interactive shell on the console.
	setsid cttyhack sh
	ukl_report $?
fi
# `ukl run -d`: the host's commands arrive one a line on the serial port
# UKL_RUN_CONTROL (`ukl stop` sends "stop"), so the program runs in the
# background while a watcher passes them on as signals. It keeps the
# console as its stdin: the shell gives a background job /dev/null.
ukl_watch_control() {
	stty -F "$UKL_RUN_CONTROL" -echo 2>/dev/null
	while read -r ukl_cmd; do
		case "$ukl_cmd" in
		stop)
			echo "ukl-init: stop: SIGTERM to the program"
			kill -TERM "$1"
			;;
		esac
	done <"$UKL_RUN_CONTROL"
}
if [ -n "$UKL_RUN_CONTROL" ]; then
	exec 3<&0
	(ukl_exec_program "$@") <&3 3<&- &
	ukl_program=$!
	exec 3<&-
	ukl_watch_control "$ukl_program" &
	ukl_watcher=$!
	wait "$ukl_program"
	ukl_status=$?
	kill "$ukl_watcher" 2>/dev/null
	ukl_report $ukl_status
fi
(ukl_exec_program "$@")
ukl_report $?
