# The data directory the image's PostgreSQL server starts with, made by
# initdb on the host (see ukl/app/debian/prepare.py for the environment).
#
# initdb runs the server in bootstrap and single-user mode, which loads
# plpgsql and dict_snowball as shared modules: a static build cannot do
# that. So the same source is built here the ordinary way, with the same
# configure options as the UKL server (the data directory's format depends
# on them), and its initdb makes the directory. The server in the image
# finds its shared files (time zones) at the --datadir it was configured
# with, /usr/share/postgresql/15, which is copied into the image too, and
# checks that its module directory, /usr/lib/postgresql/15/lib, exists.

native=$UKL_WORK/native
install=$UKL_WORK/install
prefix=/usr/lib/postgresql/15
eval "set -- $UKL_CONFIGURE_ARGS"

# Configured once per set of options (the UKL build's, and the prefix)
# and source version.
options="$* --prefix=$prefix $(cksum <"$UKL_SOURCE/debian/changelog")"
if [ ! -f "$native/config.status" ] ||
	[ "$(cat "$native/.ukl-options" 2>/dev/null)" != "$options" ]; then
	rm -rf "$native"
	cp -a "$UKL_SOURCE" "$native"
	cd "$native"
	# As for the UKL build (ukl/app/debian/build.py).
	autoreconf -fi
	./configure "$@" --prefix=$prefix CC="$CC"
	echo "$options" >.ukl-options
fi
cd "$native"
make -j"$UKL_JOBS"
rm -rf "$install"
make install DESTDIR="$install" >/dev/null

# The image's layout: Debian's paths.
data=$UKL_ROOT/var/lib/postgresql/15/main
mkdir -p "$UKL_ROOT/var/lib/postgresql/15" "$UKL_ROOT/usr/share/postgresql"
cp -a "$install/usr/share/postgresql/15" "$UKL_ROOT/usr/share/postgresql/15"
# The server checks at start-up that its module directory (--libdir) is
# there. It stays empty: a static server cannot load modules.
mkdir -p "$UKL_ROOT$prefix/lib"

# initdb refuses to run as root: as root, it runs as nobody. It checks its
# own path with access(), which a closed parent directory (a clone in a
# private directory) fails for nobody even with capabilities, so it runs
# from a copy in a fresh directory under /tmp. Other processes running as
# nobody must not reach what it writes: the staging directory is root's
# and cannot be listed, and initdb works in a subdirectory with a random
# name. The result is copied, not moved, into the image tree, without
# following links, owned by root, and refused if it holds a link.
umask 022
stage=$(mktemp -d /tmp/ukl-initdb.XXXXXX)
trap 'rm -rf "$stage"' EXIT INT TERM HUP
chmod 711 "$stage"
hidden=$stage/$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
mkdir "$hidden"
cp -a "$install" "$hidden/install"
mkdir "$hidden/db"
as_user=
if [ "$(id -u)" = 0 ]; then
	chown nobody "$hidden/db"
	as_user="setpriv --reuid=nobody --regid=nogroup --clear-groups --"
fi
LD_LIBRARY_PATH=$hidden/install$prefix/lib $as_user "$hidden/install$prefix/bin/initdb" \
	-D "$hidden/db/main" --username=postgres --auth=trust --encoding=UTF8 --locale=C \
	--no-sync --no-instructions
if [ -n "$(find "$hidden/db/main" ! -type f ! -type d)" ]; then
	echo "prepare: initdb made something other than files and directories" >&2
	exit 1
fi
cp -R -P "$hidden/db/main" "$data"
chmod 700 "$data"

# Clients come from the host through QEMU's user networking (10.0.2.2);
# the guest is the host's own, so trust them as initdb trusts local ones.
echo "host all all 0.0.0.0/0 trust" >>"$data/pg_hba.conf"
cat >>"$data/postgresql.conf" <<CONF

# ukl image (recipes/postgresql/prepare.sh)
# IPv4: the kernels are built without IPv6.
listen_addresses = '0.0.0.0'
unix_socket_directories = '/tmp'
CONF
