"""Optional features turned off when their library could not be built for
UKL (ukl/app/debian/features.py): which switches, and that configure obeys
the site file over the command line Debian's rules give it."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ukl.app.debian import features

CONFIGURE_AC = """\
AC_INIT([demo], [1.0])
AC_ARG_ENABLE(sasl, [AS_HELP_STRING([--enable-sasl], [SASL])])
AC_ARG_ENABLE([tls], [AS_HELP_STRING([--enable-tls], [TLS])])
AC_ARG_WITH([readline], [AS_HELP_STRING([--with-readline], [readline])])
AC_ARG_ENABLE([docs], [AS_HELP_STRING([--enable-docs], [docs])])
AS_IF([test "x$enable_sasl" = xyes], [AC_MSG_ERROR([SASL forced on])])
AS_IF([test "x$enable_tls" = xyes], [AC_MSG_ERROR([TLS forced on])])
AS_IF([test "x$enable_docs" != xyes], [AC_MSG_ERROR([docs turned off])])
AC_OUTPUT
"""


def _tree(tmp_path: Path) -> Path:
    (tmp_path / "configure.ac").write_text(CONFIGURE_AC)
    (tmp_path / "m4").mkdir()
    (tmp_path / "m4" / "extra.m4").write_text("AC_ARG_WITH([zlib-prefix], [x])\n")
    return tmp_path


def test_options_come_from_configure_ac_and_its_m4_files(tmp_path: Path) -> None:
    assert features.configure_options(_tree(tmp_path)) == {
        "enable_sasl", "enable_tls", "with_readline", "enable_docs", "with_zlib_prefix"}


def test_a_generated_configure_lists_its_options(tmp_path: Path) -> None:
    (tmp_path / "configure").write_text(
        "#! /bin/sh\nac_user_opts='\nenable_option_checking\nenable_static\n"
        "with_gmp\nenable_mpfr\n'\n")
    assert features.configure_options(tmp_path) == {"with_gmp", "enable_mpfr"}


def test_switches_name_the_library_its_package_or_its_source() -> None:
    options = {"enable_sasl", "enable_tls", "with_readline", "enable_docs", "with_zlib_prefix",
               "enable_static_progs"}
    off = features.switches_off(options, [("libsasl2-dev", "cyrus-sasl2"),
                                          ("libssl-dev", "openssl"),
                                          ("libreadline-dev", "readline"),
                                          ("libz-dev", "zlib"),
                                          ("libnothing-dev", None)])
    assert {dep: [s.option for s in sws] for dep, sws in off.items()} == {
        "libsasl2-dev": ["--disable-sasl"], "libssl-dev": ["--disable-tls"],
        "libreadline-dev": ["--without-readline"]}


def test_kerberos_goes_by_its_feature_name() -> None:
    # PHP's --with-kerberos: its OpenSSL extension asks pkg-config for krb5.
    off = features.switches_off({"with_kerberos", "with_openssl"}, [("libkrb5-dev", "krb5")])
    assert {d: [s.option for s in sws] for d, sws in off.items()} == {
        "libkrb5-dev": ["--without-kerberos"]}


def test_berkeley_db_goes_by_its_major_versions() -> None:
    off = features.switches_off({"with_db4", "with_dbm", "with_qdbm", "with_lmdb"},
                                [("libdb-dev", "db5.3")])
    assert {d: [s.option for s in sws] for d, sws in off.items()} == {
        "libdb-dev": ["--without-db4"]}


def test_rules_files_include_makefiles_in_debians_subdirectories(tmp_path: Path) -> None:
    (tmp_path / "debian" / "rules.d").mkdir(parents=True)
    (tmp_path / "debian" / "rules").write_text("include debian/rules.d/*.mk\n")
    (tmp_path / "debian" / "rules.d" / "ext-imap.mk").write_text(
        "ifeq (,$(filter noimap,$(DEB_BUILD_OPTIONS)))\nimap_config := --with-imap\nendif\n")
    assert [f.relative_to(tmp_path).as_posix() for f in features.rules_files(tmp_path)] == [
        "debian/rules", "debian/rules.d/ext-imap.mk"]
    assert features.rules_options(tmp_path) == {"noimap"}


def test_lighttpds_ldap_and_mysql_switches() -> None:
    """A transitional package (libldap2-dev) and a -defaults one whose
    library is MariaDB's, by MySQL's name (default-libmysqlclient-dev)."""
    off = features.switches_off({"with_ldap", "with_mysql", "with_pgsql"},
                                [("libldap2-dev", "openldap"),
                                 ("default-libmysqlclient-dev", "mariadb")])
    assert {dep: [s.option for s in sws] for dep, sws in off.items()} == {
        "libldap2-dev": ["--without-ldap"], "default-libmysqlclient-dev": ["--without-mysql"]}


def test_a_flavour_of_a_library_does_not_turn_off_what_is_kept() -> None:
    """PHP without curl keeps OpenSSL: libcurl4-openssl-dev names curl,
    not openssl, and a kept library's switches never go off."""
    options = {"with_curl", "with_openssl", "with_kerberos", "enable_util"}
    off = features.switches_off(options, [("libcurl4-openssl-dev", "curl"),
                                          ("libkrb5-dev", "krb5"),
                                          ("uuid-dev", "util-linux")],
                                kept=[("libssl-dev", "openssl")])
    assert {dep: [s.variable for s in sws] for dep, sws in off.items()} == {
        "libcurl4-openssl-dev": ["with_curl"], "libkrb5-dev": ["with_kerberos"]}
    off = features.switches_off({"with_openssl"}, [("libssl-dev", "openssl")],
                                kept=[("libcurl4-openssl-dev", "curl")])
    assert [s.variable for s in off["libssl-dev"]] == ["with_openssl"]


def test_no_library_no_switch() -> None:
    assert features.switches_off({"enable_docs"}, []) == {}
    assert features.site_text({}) == ""


def test_configure_obeys_the_site_file_over_debians_command_line(tmp_path: Path) -> None:
    """What the build relies on: Debian's rules say --enable-sasl
    --enable-tls, the site file says no, and configure goes on; options
    the site file does not name keep the command line's value."""
    tree = _tree(tmp_path)
    # autoconf: installed by `ukl setup` (Debian's builds run it).
    subprocess.run(["autoconf"], cwd=tree, check=True, capture_output=True)
    off = features.switches_off(features.configure_options(tree),
                                [("libsasl2-dev", "cyrus-sasl2"), ("libssl-dev", "openssl")])
    site = tmp_path / "config.site"
    site.write_text(features.site_text(off))
    args = ["./configure", "--enable-sasl", "--enable-tls", "--enable-docs"]
    env = {**os.environ, "CONFIG_SITE": str(site)}
    ran = subprocess.run(args, cwd=tree, env=env, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    # Without the site file, the same command line stops: the test can fail.
    env["CONFIG_SITE"] = "/dev/null"
    refused = subprocess.run(args, cwd=tree, env=env, capture_output=True, text=True)
    assert refused.returncode != 0 and "forced on" in refused.stderr


def test_debians_own_build_option_switches(tmp_path: Path) -> None:
    """dnsmasq's rules add -DHAVE_DBUS unless DEB_BUILD_OPTIONS says
    nodbus: a left-out libdbus-1-dev turns that word on."""
    (tmp_path / "debian").mkdir()
    (tmp_path / "debian" / "rules").write_text(
        "ifeq (,$(filter nodbus,$(DEB_BUILD_OPTIONS)))\n\tCOPTS += -DHAVE_DBUS\nendif\n"
        "ifeq (,$(filter noidn, $(DEB_BUILD_OPTIONS)))\n\tCOPTS += -DHAVE_LIBIDN2\nendif\n"
        "ifeq (,$(filter nocheck,$(DEB_BUILD_OPTIONS)))\n\tmake test\nendif\n"
        "# nothing else: notftp\n")
    options = features.rules_options(tmp_path)
    assert options == {"nodbus", "noidn"}
    off = features.switches_off(options, [("libdbus-1-dev", "dbus"),
                                          ("libidn2-dev", "libidn2"), ("libtftp-dev", None)])
    assert {d: [s.option for s in sws] for d, sws in off.items()} == {
        "libdbus-1-dev": ["DEB_BUILD_OPTIONS=nodbus"], "libidn2-dev": ["DEB_BUILD_OPTIONS=noidn"]}
    assert features.build_options(off) == ["nodbus", "noidn"]
    assert features.site_text(off) == ""


REDIS_LIKE_RULES = """\
export BUILD_TLS = yes
override_dh_auto_build:
\tdh_auto_build -- V=1 USE_SYSTEM_JEMALLOC=yes USE_SYSTEMD=yes USE_JEMALLOC=yes
"""
REDIS_LIKE_MAKEFILE = """\
USE_SYSTEMD ?= auto
all:
\t@echo systemd=$(USE_SYSTEMD) tls=$(BUILD_TLS)
"""


def test_a_make_variable_switch_turns_off_what_the_rules_force_on(tmp_path: Path) -> None:
    """redis's rules run `make USE_SYSTEMD=yes` (libsystemd is built only
    with all of systemd): with systemd left out, every make of the build
    gets USE_SYSTEMD=no last, which wins over the rules' own."""
    (tmp_path / "debian").mkdir()
    (tmp_path / "debian" / "rules").write_text(REDIS_LIKE_RULES)
    assert features.make_options(tmp_path) == {
        "BUILD_TLS=no", "USE_SYSTEM_JEMALLOC=no", "USE_SYSTEMD=no", "USE_JEMALLOC=no"}
    off = features.turn_off(tmp_path, [("libsystemd-dev", "systemd")],
                            [("libssl-dev", "openssl"), ("libjemalloc-dev", "jemalloc")])
    assert off.make_args == ("USE_SYSTEMD=no",)
    assert [s.option for s in off.switches["libsystemd-dev"]] == ["make USE_SYSTEMD=no"]
    assert off.site == "" and off.build_options == ()
    # The make that Debian's build finds first in PATH.
    from ukl.app.debian import rules
    shims = rules.compiler_shims(tmp_path / "shims", "cc", "c++", make_args=off.make_args)
    (tmp_path / "Makefile").write_text(REDIS_LIKE_MAKEFILE)
    env = dict(os.environ, PATH=f"{shims}:{os.environ['PATH']}", BUILD_TLS="yes")
    out = subprocess.run(["make", "-s", "USE_SYSTEMD=yes"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "systemd=no tls=yes"
    # Without assignments there is no make shim.
    rules.compiler_shims(tmp_path / "shims", "cc", "c++")
    assert not (shims / "make").exists()


def test_a_make_variable_set_to_1_is_turned_off_by_the_empty_value(tmp_path: Path) -> None:
    """haproxy's rules run `make USE_LUA=1 USE_OT=1`, and its Makefile
    tests `ifneq ($(USE_LUA),)`: 0 would leave Lua on."""
    (tmp_path / "debian").mkdir()
    (tmp_path / "debian" / "rules").write_text(
        "override_dh_auto_build-arch:\n\tmake USE_LUA=1 USE_OT=1 USE_OPENSSL=1 TARGET=linux\n")
    off = features.turn_off(tmp_path, [("liblua5.3-dev", "lua5.3"),
                                       ("libopentracing-c-wrapper-dev", "opentracing-c-wrapper")],
                            [("libssl-dev", "openssl")])
    assert off.make_args == ("USE_LUA=", "USE_OT=")


def test_a_cmake_definition_turns_off_what_the_rules_give_cmake(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """mosquitto's rules run cmake with -DWITH_SYSTEMD=${SYSTEMD} and
    -DUSE_LIBWRAP=ON: a configure run gets -D...=OFF after them, its other
    modes nothing."""
    (tmp_path / "debian").mkdir()
    (tmp_path / "debian" / "rules").write_text(
        "override_dh_auto_configure:\n\tdh_auto_configure -- -DWITH_BUNDLED_DEPS=OFF "
        "-DUSE_LIBWRAP=ON -DWITH_SYSTEMD=${SYSTEMD} -DWITH_CJSON:BOOL=ON\n")
    off = features.turn_off(tmp_path, [("libsystemd-dev", "systemd"),
                                       ("libwrap0-dev", "tcp-wrappers")],
                            [("libcjson-dev", "cjson")])
    assert off.cmake_args == ("-DUSE_LIBWRAP=OFF", "-DWITH_SYSTEMD=OFF")
    assert off.make_args == () and off.site == ""
    assert [s.option for s in off.switches["libwrap0-dev"]] == ["cmake -DUSE_LIBWRAP=OFF"]
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "cmake").write_text('#!/bin/sh\necho "$@"\n')
    (fake / "cmake").chmod(0o755)
    from ukl.app.debian import rules
    monkeypatch.setattr(rules, "DEBIAN_BUILD_PATH", f"{fake}:{rules.DEBIAN_BUILD_PATH}")
    shims = rules.compiler_shims(tmp_path / "shims", "cc", "c++", cmake_args=off.cmake_args)

    def run(*args: str) -> str:
        return subprocess.run([str(shims / "cmake"), *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    assert run("-DWITH_SYSTEMD=ON", "..") == \
        "-DWITH_SYSTEMD=ON .. -DUSE_LIBWRAP=OFF -DWITH_SYSTEMD=OFF"
    assert run("-E", "touch", "x") == "-E touch x"
    assert run("-S.", "-B.", "--check-build-system", "CMakeFiles/Makefile.cmake", "0") == \
        "-S. -B. --check-build-system CMakeFiles/Makefile.cmake 0"


def test_packages_that_need_a_left_out_library_but_not_the_programs_own(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """dnsmasq without Lua: its Lua variant's package is skipped on the
    second try; the program's own package, and what it depends on, never
    (perl's libperl5.36, which perl depends on, needs Berkeley DB)."""
    from ukl.app.debian import archive
    graph = {
        "dnsmasq-base": ("dnsmasq", ("libdbus-1-3", "libidn2-0")),
        "dnsmasq-base-lua": ("dnsmasq", ("liblua5.4-0", "libidn2-0")),
        "dnsmasq-utils": ("dnsmasq", ("libc6",)),
        "liblua5.4-0": ("lua5.4", ()), "libidn2-0": ("libidn2", ()),
        "libdbus-1-3": ("dbus", ()), "libc6": ("glibc", ()),
        "perl-base": ("perl", ("libc6",)), "perl": ("perl", ("perl-base", "libperl5.36")),
        "libperl5.36": ("perl", ("libdb5.3",)), "libdb5.3": ("db5.3", ()),
    }
    monkeypatch.setattr(archive, "show", lambda name: archive.BinaryPackage(
        name, "1", graph[name][0], graph[name][1]) if name in graph else None)
    monkeypatch.setattr(archive, "prefetch", lambda names: None)
    dnsmasq = ["dnsmasq-base", "dnsmasq-base-lua", "dnsmasq-utils"]
    assert features.packages_needing(dnsmasq, {"lua5.4"}, ["dnsmasq-base"]) == [
        "dnsmasq-base-lua"]
    assert features.packages_needing(dnsmasq, {"dbus"}, ["dnsmasq-base"]) == []
    assert features.packages_needing(["perl-base", "perl", "libperl5.36"], {"db5.3"},
                                     ["perl-base", "perl"]) == []
    assert features.Off(skip=("a", "b")).dh_options == "-Na -Nb"


def test_a_skipped_flavour_is_not_built_by_the_rules_either(tmp_path: Path) -> None:
    # curl's rules configure a libcurl for each TLS library unless its
    # profiles say otherwise; without NSS, libcurl3-nss is skipped and its
    # flavour (configure --with-nss, which fails) must not be built.
    (tmp_path / "debian").mkdir()
    (tmp_path / "debian" / "rules").write_text(
        "ifeq ($(filter pkg.curl.no-nss,$(DEB_BUILD_PROFILES)),)\n"
        "ifneq ($(filter pkg.curl.no-gnutls,$(DEB_BUILD_PROFILES)),)\n"
        "ifneq ($(filter pkg.curl.openssl-only,$(DEB_BUILD_PROFILES)),)\n"
        "ifneq ($(filter pkg.other.no-nss,$(DEB_BUILD_PROFILES)),)\n")
    assert features.flavour_profiles(tmp_path, "curl", ("libcurl3-nss",)) == {"pkg.curl.no-nss"}
    assert features.flavour_profiles(tmp_path, "curl", ("libcurl3-gnutls", "libcurl3-nss")) == {
        "pkg.curl.no-nss", "pkg.curl.no-gnutls"}
    assert features.flavour_profiles(tmp_path, "curl", ("libcurl4",)) == frozenset()


def test_a_configure_error_naming_a_missing_library_turns_off_its_feature() -> None:
    """PHP's FPM: --with-fpm-systemd asks pkg-config for libsystemd, and
    --with-fpm-apparmor checks for -lapparmor; neither error names the
    switch."""
    options = {"with_fpm_systemd", "with_fpm_apparmor", "with_fpm_acl", "enable_fpm",
               "with_openssl", "enable_static"}
    off = features.Off(missing_ok=True)
    systemd = ("debian/rules php8.2 failed: configure: error: Package requirements "
               "(libsystemd >= 209) were not met; full log: x")
    assert [sw.option for sw in features.asked_off(systemd, options, off)] == [
        "--without-fpm-systemd"]
    apparmor = "configure: error: libapparmor required but not found"
    assert [sw.option for sw in features.asked_off(apparmor, options, off)] == [
        "--without-fpm-apparmor"]
    # Once off, it is not asked again; an error naming nothing asks nothing.
    done = features.with_asked_off(off, [features.Switch("with_fpm_apparmor")])
    assert features.asked_off(apparmor, options, done) == []
    assert features.asked_off("configure: error: Header contains different version",
                              options, off) == []
