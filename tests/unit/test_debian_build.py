"""Debian's own build for `ukl build --debian` (ukl/app/debian/control.py,
libdeps.py, rules.py) and the catalog's entries and verdicts
(ukl/catalog.py): the parts that need no archive, no build and no boot."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ukl import catalog
from ukl.app.debian import archive, control, libdeps, rules
from ukl.common.errors import UklError, UsageError
from ukl.toolchain import driver

CONTROL = """\
Source: demo
Build-Depends: debhelper-compat (= 13), libreadline-dev | libedit-dev,
 libwin32-dev [mingw32], libonly-linux-dev [linux-any], libnot-amd64-dev [!amd64],
 check <!nocheck>, docbook-xsl <!nodoc>, libprofile-dev <pkg.demo.extra>,
 libsql-dev <!pkg.demo.nosql>, libother-dev <!pkg.other.nosql>,
 libpython3-all-dev <!nopython>, python3-setuptools <!nopython>,
Build-Depends-Arch: libarch-dev

Package: demo
Architecture: any
Description: x

Package: demo-doc
Architecture: all
Description: x
"""


def _source(tmp_path: Path) -> Path:
    (tmp_path / "debian").mkdir()
    (tmp_path / "debian" / "control").write_text(CONTROL)
    (tmp_path / "debian" / "changelog").write_text(
        "demo (1.2-3) unstable; urgency=medium\n\n  * x\n\n"
        " -- A <a@example.org>  Mon, 01 Jan 2024 00:00:00 +0000\n")
    return tmp_path


def test_build_depends_of_an_amd64_build_without_tests(tmp_path: Path) -> None:
    ctl = control.read(_source(tmp_path))
    assert (ctl.source, ctl.version) == ("demo", "1.2-3")
    assert ctl.build_depends == [["debhelper-compat"], ["libreadline-dev", "libedit-dev"],
                                 ["libonly-linux-dev"], ["docbook-xsl"], ["libsql-dev"],
                                 ["libother-dev"], ["libpython3-all-dev"],
                                 ["python3-setuptools"], ["libarch-dev"]]
    assert ctl.binaries == ["demo"]
    assert ctl.all_binaries == ["demo", "demo-doc"]
    assert ctl.profiles == {"nocheck"}


def test_a_library_dependency_builds_with_its_packages_lean_profiles(tmp_path: Path) -> None:
    """Built for another package's sake, a library leaves out what its own
    profiles (pkg.SOURCE.no*) let it, and its bindings for other languages
    (Debian's nopython, when its control names it); another package's
    profile is not its."""
    ctl = control.read(_source(tmp_path), library=True)
    assert ctl.profiles == {"nocheck", "pkg.demo.nosql", "nopython"}
    assert ["libsql-dev"] not in ctl.build_depends
    assert ["libpython3-all-dev"] not in ctl.build_depends
    assert ["libother-dev"] in ctl.build_depends


def test_not_a_source_package_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UklError, match="not an unpacked Debian source package"):
        control.read(tmp_path)


def test_checkbuilddeps_output_becomes_a_relation_field() -> None:
    text = rules.checkbuilddeps_list("libonig-dev rake ruby-ronn:native debhelper-compat (= 13) "
                                     "libfoo-dev (>= 1.2) | libbar-dev")
    assert control.relations(text) == [["libonig-dev"], ["rake"], ["ruby-ronn"],
                                       ["debhelper-compat"], ["libfoo-dev", "libbar-dev"]]


def _fake_archive(monkeypatch: pytest.MonkeyPatch, files: dict[str, list[str]]) -> None:
    def show(name: str) -> archive.BinaryPackage | None:
        return archive.BinaryPackage(name, "1", f"src-{name}") if name in files else None
    monkeypatch.setattr(archive, "show", show)
    monkeypatch.setattr(archive, "prefetch", lambda names: None)
    monkeypatch.setattr(archive, "contents", lambda pkg: files[pkg.name])


def test_dependencies_sorted_by_what_a_ukl_build_does_with_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_archive(monkeypatch, {
        "libz-dev": ["usr/include/zlib.h", "usr/lib/x86_64-linux-gnu/libz.a",
                     "usr/lib/x86_64-linux-gnu/libz.so"],
        "libonig-dev": ["usr/include/oniguruma.h", "usr/lib/x86_64-linux-gnu/libonig.so"],
        "bison": ["usr/bin/bison"],
        "libc6-dev": ["usr/lib/x86_64-linux-gnu/libc.a"],
    })
    kinds = {d.name: (d.kind, d.source) for d in libdeps.classify_all(
        [["libz-dev"], ["libonig-dev"], ["bison"], ["libc6-dev"], ["nowhere-dev", "bison"]])}
    assert kinds == {"libz-dev": ("library", "src-libz-dev"),
                     "libonig-dev": ("library", "src-libonig-dev"),
                     "bison": ("tool", "src-bison"),
                     "libc6-dev": ("toolchain", "src-libc6-dev")}


def test_a_library_install_takes_headers_archives_and_pkgconfig(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    staged = tree / "debian" / "tmp"
    libdir = staged / "usr/lib/x86_64-linux-gnu"
    (libdir / "pkgconfig").mkdir(parents=True)
    (staged / "usr/include").mkdir(parents=True)
    (staged / "usr/include/onig.h").write_text("")
    (staged / "usr/bin").mkdir()
    (staged / "usr/bin/onig-config").write_text("")
    (libdir / "libonig.so.5").write_text("")
    (libdir / "pkgconfig/onig.pc").write_text("prefix=/usr\nlibdir=/usr/lib/x86_64-linux-gnu\n"
                                              "Libs: -L${libdir} -lonig\n")
    # Debian's rules deleted the archive from debian/tmp; the build made it.
    (tree / "src/.libs").mkdir(parents=True)
    (tree / "src/.libs/libonig.a").write_text("archive")
    dest = tmp_path / "install"
    assert rules.install_library(tree, ["libonig5"], dest) == [
        "usr/lib/x86_64-linux-gnu/libonig.a"]
    assert (dest / "usr/include/onig.h").is_file()
    assert not (dest / "usr/bin").exists()
    assert (dest / "usr/lib/x86_64-linux-gnu/libonig.a").read_text() == "archive"
    pc = (dest / "usr/lib/x86_64-linux-gnu/pkgconfig/onig.pc").read_text()
    assert f"prefix={dest}/usr\nlibdir={dest}/usr/lib/x86_64-linux-gnu\n" in pc


def test_static_archives_are_allowed_once_in_not_installed(tmp_path: Path) -> None:
    (tmp_path / "debian").mkdir()
    (tmp_path / "debian" / "not-installed").write_text("usr/share/doc/x")
    rules.allow_static_archives(tmp_path)
    rules.allow_static_archives(tmp_path)
    text = (tmp_path / "debian" / "not-installed").read_text()
    assert text.startswith("usr/share/doc/x\n")
    assert text.count("usr/lib/*/*.a") == 1


def test_program_found_in_the_staged_binary_package(tmp_path: Path) -> None:
    sbin = tmp_path / "debian" / "dnsmasq-base" / "usr" / "sbin"
    sbin.mkdir(parents=True)
    (sbin / "dnsmasq").write_text("")
    (sbin / "dnsmasq").chmod(0o755)
    assert rules.find_program(tmp_path, ["dnsmasq-base"], ["dnsmasq"]) == sbin / "dnsmasq"
    assert rules.find_program(tmp_path, ["dnsmasq-base"], ["other"]) is None


def test_the_program_is_taken_as_its_package_ships_it(tmp_path: Path) -> None:
    # debian/tmp's perl is the shared-library flavour `make install` put
    # there; perl-base ships the static one.
    for staged, text in (("tmp", "shared flavour"), ("perl-base", "static flavour")):
        bindir = tmp_path / "debian" / staged / "usr" / "bin"
        bindir.mkdir(parents=True)
        (bindir / "perl").write_text(text)
        (bindir / "perl").chmod(0o755)
    found = rules.find_program(tmp_path, ["perl-base", "perl"], ["perl"], "perl-base")
    assert found is not None and found.read_text() == "static flavour"
    found = rules.find_program(tmp_path, ["perl-base", "perl"], ["perl"])
    assert found is not None and found.read_text() == "shared flavour"


def test_a_program_linked_from_another_package_keeps_its_name(tmp_path: Path) -> None:
    # redis-server's usr/bin/redis-server -> redis-check-rdb, which
    # redis-tools ships; redis picks its mode from its own name.
    server = tmp_path / "debian" / "redis-server" / "usr" / "bin"
    tools = tmp_path / "debian" / "redis-tools" / "usr" / "bin"
    server.mkdir(parents=True)
    tools.mkdir(parents=True)
    (tools / "redis-check-rdb").write_text("the server")
    (tools / "redis-check-rdb").chmod(0o755)
    (server / "redis-server").symlink_to("redis-check-rdb")
    found = rules.find_program(tmp_path, ["redis-server", "redis-tools"], ["redis-server"])
    assert found is not None and found.name == "redis-server"
    assert found.read_text() == "the server"
    (server / "redis-server").unlink()
    (server / "redis-server").symlink_to("/usr/bin/redis-check-rdb")
    found = rules.find_program(tmp_path, ["redis-server", "redis-tools"], ["redis-server"])
    assert found is not None and found.name == "redis-server"
    (server / "redis-server").unlink()
    (server / "redis-server").symlink_to("nothing-there")
    assert rules.find_program(tmp_path, ["redis-server", "redis-tools"], ["redis-server"]) is None


def test_catalog_lists_twenty_packages_with_a_test_each() -> None:
    entries = catalog.load()
    assert len(entries) == 20
    assert all(e.test and e.expect for e in entries)
    assert {e.name for e in catalog.select(entries, [], small=True)} <= {e.name for e in entries}
    with pytest.raises(UsageError, match="not in"):
        catalog.select(entries, ["no-such"], small=False)


def test_catalog_entry_errors(tmp_path: Path) -> None:
    bad = tmp_path / "c.ini"
    bad.write_text("[x]\ntest = t\nexpect = (\n")
    with pytest.raises(UklError, match="not a regular expression"):
        catalog.load(bad)
    bad.write_text("[x]\ntest = t\nexpect = y\ncolour = red\n")
    with pytest.raises(UklError, match="unknown keys: colour"):
        catalog.load(bad)


def test_catalog_verdicts() -> None:
    cmd = catalog.Entry("jq", "jq", None, "adds", [], r"^6\s*$")
    assert catalog.check_output(cmd, "boot\n6\nukl-init: exit status 0\n", 0) == ""
    assert catalog.check_output(cmd, "\x1b[0;39m6\x1b[0m\n", 0) == ""
    assert "exit status 5" in catalog.check_output(cmd, "6\n", 5)
    assert "does not match" in catalog.check_output(cmd, "7\n", 0)
    server = catalog.Entry("redis", "redis", None, "t", [], r"\+OK", probe="nc ...")
    console = f"x\n{catalog.PROBE_BEGIN}\n+OK\nukl-catalog: probe end, status 0\n"
    assert catalog.check_output(server, console, 143) == ""
    assert "did not run to the end" in catalog.check_output(server, "x\n", 0)
    assert "does not match" in catalog.check_output(
        server, console.replace("+OK", "-ERR"), 0)


@pytest.mark.parametrize("depends,binaries,why", [
    ([["debhelper-compat"], ["dh-golang"]], ["hugo"], "a Go program"),
    ([["cargo"]], ["ripgrep"], "a Rust program"),
    ([["dh-python"], ["python3-all-dev"]], ["python3-yaml"], "Python extension modules"),
    ([["debhelper-compat"]], [], "architecture-independent"),
])
def test_packages_that_are_not_c_programs_are_named(depends: list[list[str]],
                                                    binaries: list[str], why: str) -> None:
    ctl = control.Control("x", "1", depends, binaries, binaries)
    assert why in (libdeps.unsuitable(ctl) or "")
    assert libdeps.unsuitable(control.Control("x", "1", [["libz-dev"]], ["x"], ["x"])) is None


def test_a_library_with_java_bindings_is_still_built() -> None:
    # db5.3: perl needs its C library; its Java bindings need a JDK.
    ctl = control.Control("db5.3", "1", [["default-jdk"], ["tcl-dev"]], ["libdb5.3-dev"],
                          ["libdb5.3-dev"])
    assert "Java" in (libdeps.unsuitable(ctl) or "")
    assert libdeps.unsuitable(ctl, library=True) is None


def test_compiler_names_rules_call_directly_run_ukl_cc(tmp_path: Path) -> None:
    shims = rules.compiler_shims(tmp_path / "compilers", "/x/ukl-cc", "/x/ukl-c++")
    assert (shims / "x86_64-linux-gnu-gcc").read_text() == '#!/bin/sh\nexec /x/ukl-cc "$@"\n'
    assert "exec /x/ukl-c++ " in (shims / "g++").read_text()
    assert all((shims / n).stat().st_mode & 0o111 for n in ("cc", "gcc", "c++"))


def test_a_debian_build_runs_the_systems_tools_not_the_users(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # pyenv's python3 first in a user's PATH built protobuf's extension
    # against pyenv's headers; Debian builds in a chroot of system tools.
    monkeypatch.setenv("PATH", f"{tmp_path}/pyenv/shims:/usr/local/bin:/usr/bin:/bin")
    stock = rules.environment(False, "cc", "c++", [], tmp_path)
    assert stock["PATH"] == rules.DEBIAN_BUILD_PATH
    ukl = rules.environment(True, "ukl-cc", "ukl-c++", [], tmp_path)
    shims, rest = ukl["PATH"].split(":", 1)
    assert shims == str(tmp_path / "compilers") and rest == rules.DEBIAN_BUILD_PATH


def test_ukl_cc_takes_the_shims_out_of_its_own_path(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    monkeypatch.setenv(driver.COMPILER_SHIMS_ENV, str(tmp_path))
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    driver._real_compilers_first()
    assert os.environ["PATH"] == "/usr/bin:/bin"


def test_a_mirror_that_cannot_serve_a_source_says_which_file() -> None:
    from ukl.app.debian import source
    out = ("Err:3 http://deb.debian.org/debian bookworm/main gpm 1.20.7-10 (diff)\n"
           "  404  Not Found [IP: 203.0.113.80 80]\n"
           "E: Failed to fetch http://deb.debian.org/debian/pool/main/g/gpm/"
           "gpm_1.20.7-10.debian.tar.xz  404  Not Found [IP: 203.0.113.80 80]\n"
           "E: Failed to fetch some archives.\n")
    assert source.fetch_failures(out) == ["gpm_1.20.7-10.debian.tar.xz: 404 Not Found"]


def test_a_library_links_what_its_shared_libraries_depend_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """cyrus-sasl2's library links Berkeley DB, not its plugins' SQL and
    LDAP libraries; the C library is the toolchain's; a program (the
    section says so) is not followed."""
    graph = {
        "libsasl2-dev": ("cyrus-sasl2", "libdevel", ("libc-dev", "libsasl2-2")),
        "libsasl2-2": ("cyrus-sasl2", "libs", ("libsasl2-modules-db", "libc6")),
        "libsasl2-modules-db": ("cyrus-sasl2", "libs", ("libdb5.3", "zlib1g", "adduser")),
        "libdb5.3": ("db5.3", "libs", ("libc6",)),
        "zlib1g": ("zlib", "libs", ()),
        "adduser": ("adduser", "admin", ("passwd",)),
        "libsasl2-modules-sql": ("cyrus-sasl2", "libs", ("libpq5",)),
        "libc6": ("glibc", "libs", ()),
    }

    def show(name: str) -> archive.BinaryPackage | None:
        if name not in graph:
            return None
        source, section, depends = graph[name]
        return archive.BinaryPackage(name, "1", source, depends, section)
    monkeypatch.setattr(archive, "show", show)
    monkeypatch.setattr(archive, "prefetch", lambda names: None)
    assert archive.link_sources("libsasl2-dev") == {"cyrus-sasl2", "db5.3", "zlib"}
    # A package of the start's own source is followed whatever its section
    # (python3.11-minimal's standard library, section python, links OpenSSL).
    graph.update({
        "python3.11-minimal": ("python3.11", "python", ("libpython3.11-minimal", "zlib1g")),
        "libpython3.11-minimal": ("python3.11", "python", ("libssl3",)),
        "libssl3": ("openssl", "libs", ()),
    })
    assert archive.link_sources("python3.11-minimal") == {"python3.11", "zlib", "openssl"}


def test_a_library_dependency_builds_only_what_its_library_links(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from ukl.app.debian import build as debbuild
    monkeypatch.setattr(debbuild, "_LEFT_OUT_AS_ASKED", set())
    pkgs = {n: archive.BinaryPackage(n, "1", s) for n, s in
            (("libdb-dev", "db5.3"), ("libpq-dev", "postgresql-15"),
             ("libsystemd-dev", "systemd"))}
    monkeypatch.setattr(libdeps, "classify_all", lambda deps: [
        libdeps.Dependency(n, "library", pkgs[n], shared=True) for n in pkgs])
    asked: list[tuple[str, str | None]] = []

    def build(src: str, ukl: bool, _chain: tuple[str, ...], library: bool,
              linked_as: str | None, leave_out: frozenset[str]) -> debbuild.Built:
        asked.append((src, linked_as))
        (tmp_path / src / "usr/lib").mkdir(parents=True)
        (tmp_path / src / "usr/lib/libdb.a").write_text("")
        return debbuild.Built(src, tmp_path, tmp_path / src, None, [])
    monkeypatch.setattr(debbuild, "build", build)
    ctl = control.Control("cyrus-sasl2", "1", [], ["libsasl2-2"], ["libsasl2-2"])
    built, left, kept = debbuild._library_deps(ctl, ("memcached",),
                                               frozenset({"db5.3", "systemd"}))
    assert kept == [("libdb-dev", "db5.3")]
    assert asked == [("db5.3", "libdb-dev")]
    assert [b.package for b in built] == ["db5.3"]
    assert [(d.name, d.why.split(":")[0].split(" (")[0]) for d in left] == [
        ("libpq-dev", "Debian's cyrus-sasl2 does not link it"),
        ("libsystemd-dev", "libsystemd is built only with the whole of systemd, as a shared "
         "library")]
    asked.clear()
    built, left, kept = debbuild._library_deps(ctl, ("memcached",), None, frozenset({"db5.3"}))
    assert [d.why for d in left if d.name == "libdb-dev"] == ["left out as asked (--without)"]
    assert ("db5.3", "libdb-dev") not in asked
    assert debbuild.unmatched(frozenset({"db5.3", "libnothing-dev"})) == ["libnothing-dev"]


def test_a_library_without_source_still_gives_its_headers_and_static_ones_are_built(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """uthash-dev: a static-only library (no trace in Depends, so never
    taken for unlinked) whose source the mirror cannot serve: left out,
    its headers from the .deb (mosquitto uses it as header-only)."""
    from ukl.app.debian import build as debbuild
    from ukl.app.debian import source as debsrc
    monkeypatch.setattr(debbuild, "_FAILED_LIBRARIES", {})
    uthash = archive.BinaryPackage("uthash-dev", "2.3.0-1", "uthash")
    monkeypatch.setattr(libdeps, "classify_all", lambda deps: [
        libdeps.Dependency("uthash-dev", "library", uthash, ("usr/lib/libut.a",), ("ut",))])
    monkeypatch.setattr(libdeps, "implied", lambda: [])

    def build(src: str, **kwargs: object) -> debbuild.Built:
        raise debsrc.SourceUnavailable("apt-get source uthash failed in every suite")
    monkeypatch.setattr(debbuild, "build", build)
    headers = debbuild.Built("uthash-dev", tmp_path, tmp_path, None, [], sysroots=(tmp_path,))
    monkeypatch.setattr(debbuild, "_headers", lambda pkg: headers)
    ctl = control.Control("mosquitto", "1", [], ["mosquitto"], ["mosquitto"])
    for _ in range(2):  # the second time from the failure remembered
        built, left, kept = debbuild._library_deps(ctl, (), frozenset({"openssl"}))
        assert built == [headers] and kept == []
        assert [(d.name, d.link_names) for d in left] == [("uthash-dev", ("ut",))]
        assert left[0].why.startswith("apt-get source uthash failed")


def test_the_program_is_looked_for_in_the_package_named_like_it_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_archive(monkeypatch, {
        "nginx-common": ["etc/nginx/nginx.conf"],
        "libnginx-mod-http-image-filter": ["usr/lib/nginx/modules/ngx_http_image_filter.so"],
        "nginx": ["usr/sbin/nginx", "usr/share/doc/nginx/copyright"],
        "perl-base": ["usr/bin/perl", "usr/bin/cpan"],
    })
    assert archive.shipping(["nginx-common", "libnginx-mod-http-image-filter", "nginx"],
                            ["nginx"]) == "nginx"
    assert archive.shipping(["perl", "perl-base"], ["perl"]) == "perl-base"
    assert archive.shipping(["nginx-common"], ["nginx"]) is None
    # The source's name first, then its packages' (libzstd ships zstd).
    assert archive.shipping(["nginx-common", "nginx"], ["nginx-source", "nginx"]) == "nginx"


def test_the_images_data_is_what_the_program_reads_not_docs_or_libraries(
        tmp_path: Path) -> None:
    staged = tmp_path / "debian" / "libpython3.11-minimal"
    for d in ("usr/lib/python3.11/encodings", "usr/lib/x86_64-linux-gnu",
              "usr/share/doc/libpython3.11-minimal", "usr/share/binfmts", "etc/python3.11"):
        (staged / d).mkdir(parents=True)
    (staged / "usr/lib/python3.11/os.py").write_text("")
    (tmp_path / "debian" / "python3.11-minimal" / "usr/bin").mkdir(parents=True)
    trees = rules.data_trees(tmp_path, ["python3.11-minimal", "libpython3.11-minimal",
                                        "not-built"])
    assert [guest for _, guest in trees] == ["/etc", "/usr/lib/python3.11", "/usr/share/binfmts"]
    assert trees[1][0] == staged / "usr/lib/python3.11"
    # perl-base's modules are in a directory of the multiarch directory;
    # its shared libraries (files there) are not data.
    base = tmp_path / "debian" / "perl-base"
    (base / "usr/lib/x86_64-linux-gnu/perl-base/List").mkdir(parents=True)
    (base / "usr/lib/x86_64-linux-gnu/perl-base/List/Util.pm").write_text("")
    (base / "usr/lib/x86_64-linux-gnu/libperl.so.5.36").write_text("")
    assert rules.data_trees(tmp_path, ["perl-base"]) == [
        (base / "usr/lib/x86_64-linux-gnu/perl-base", "/usr/lib/x86_64-linux-gnu/perl-base")]


def test_a_program_package_brings_the_packages_of_its_source_it_depends_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    graph = {"python3.11-minimal": ("libpython3.11-minimal", "libexpat1", "zlib1g"),
             "libpython3.11-minimal": ("libc6",)}
    monkeypatch.setattr(archive, "show", lambda name: archive.BinaryPackage(
        name, "1", "python3.11", graph.get(name, ())))
    monkeypatch.setattr(archive, "prefetch", lambda names: None)
    assert archive.same_source_depends(
        "python3.11-minimal", ["python3.11", "python3.11-minimal", "libpython3.11-minimal"]) == [
            "python3.11-minimal", "libpython3.11-minimal"]


def test_a_defaults_package_stands_for_the_library_it_depends_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """libdb-dev (source db-defaults) is built as db5.3, its real source."""
    graph = {"libdb-dev": archive.BinaryPackage("libdb-dev", "1", "db-defaults",
                                                ("libdb5.3-dev",)),
             "libdb5.3-dev": archive.BinaryPackage("libdb5.3-dev", "1", "db5.3", ("libdb5.3",))}
    monkeypatch.setattr(archive, "show", graph.get)
    monkeypatch.setattr(archive, "contents", lambda pkg: {
        "libdb5.3-dev": ["usr/include/db.h", "usr/lib/x86_64-linux-gnu/libdb-5.3.a"]}[pkg.name])
    dep = libdeps.classify(["libdb-dev"])
    assert (dep.name, dep.kind, dep.source) == ("libdb-dev", "library", "db5.3")


def test_a_transitional_dev_package_stands_for_the_one_it_depends_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """libldap2-dev ships no library, only a dependency on libldap-dev:
    it is that library (lighttpd's build depends on it), not a tool to
    install on the host, whose library a UKL link cannot take."""
    graph = {"libldap2-dev": archive.BinaryPackage("libldap2-dev", "1", "openldap",
                                                   ("libldap-dev",)),
             "libldap-dev": archive.BinaryPackage("libldap-dev", "1", "openldap",
                                                  ("libldap-2.5-0",))}
    monkeypatch.setattr(archive, "show", graph.get)
    monkeypatch.setattr(archive, "contents", lambda pkg: {
        "libldap2-dev": ["usr/share/doc/libldap2-dev/copyright"],
        "libldap-dev": ["usr/include/ldap.h",
                        "usr/lib/x86_64-linux-gnu/libldap.so"]}[pkg.name])
    dep = libdeps.classify(["libldap2-dev"])
    assert (dep.name, dep.kind, dep.source) == ("libldap2-dev", "library", "openldap")
    assert dep.package is not None and dep.package.name == "libldap-dev"


def test_a_headers_only_dev_package_goes_into_the_ukl_sysroot(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """systemtap-sdt-dev ships <sys/sdt.h> and no library: Python's build
    includes it, and ukl-cc does not search the host's /usr/include. Its
    headers come from Debian's .deb into a tree ukl-cc searches."""
    from ukl.app.debian import build as debbuild
    monkeypatch.setenv("UKL_BUILD_DIR", str(tmp_path / "build"))
    pkg = archive.BinaryPackage("systemtap-sdt-dev", "1:4.8-2", "systemtap", ("python3:any",))
    monkeypatch.setattr(archive, "show", {"systemtap-sdt-dev": pkg}.get)
    monkeypatch.setattr(archive, "contents", lambda p: [
        "usr/", "usr/include/", "usr/include/sys/", "usr/include/sys/sdt.h", "usr/bin/dtrace"])
    dep = libdeps.classify(["systemtap-sdt-dev"])
    assert (dep.kind, dep.source) == ("headers", "systemtap")

    root = tmp_path / "deb"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(
        "Package: systemtap-sdt-dev\nVersion: 4.8-2\nArchitecture: all\n"
        "Maintainer: x <x@example.org>\nDescription: x\n")
    (root / "usr" / "include" / "sys").mkdir(parents=True)
    (root / "usr" / "include" / "sys" / "sdt.h").write_text("#define UKL_SDT 1\n")
    deb = tmp_path / "systemtap-sdt-dev_4.8-2_all.deb"
    subprocess.run(["dpkg-deb", "-b", str(root), str(deb)], check=True, capture_output=True)
    monkeypatch.setattr(archive, "download", lambda p: deb)
    built = debbuild._headers(pkg)
    assert built.sysroots == (built.prefix,)
    # Its path goes into a colon-separated list: an epoch's colon is not in it.
    assert ":" not in str(built.prefix)
    assert (built.prefix / "usr" / "include" / "sys" / "sdt.h").read_text() == "#define UKL_SDT 1\n"
    # Unpacked once.
    monkeypatch.setattr(archive, "download", lambda p: pytest.fail("downloaded again"))
    assert debbuild._headers(pkg).prefix == built.prefix


def test_a_libraries_headers_go_without_its_libraries_and_their_pkgconfig(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """libargon2-dev, whose source cannot be fetched: its header serves,
    but its libargon2.pc would have configure find a library no UKL link
    has. A .pc that names no removed library stays."""
    from ukl.app.debian import build as debbuild
    monkeypatch.setenv("UKL_BUILD_DIR", str(tmp_path / "build"))
    pkg = archive.BinaryPackage("libargon2-dev", "0~20171227-0.3", "argon2", ())
    root = tmp_path / "deb"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(
        "Package: libargon2-dev\nVersion: 0~20171227-0.3\nArchitecture: amd64\n"
        "Maintainer: x <x@example.org>\nDescription: x\n")
    (root / "usr" / "include").mkdir(parents=True)
    (root / "usr" / "include" / "argon2.h").write_text("int argon2_hash(void);\n")
    lib = root / "usr" / "lib" / "x86_64-linux-gnu"
    (lib / "pkgconfig").mkdir(parents=True)
    (lib / "libargon2.a").write_bytes(b"!<arch>\n")
    (lib / "pkgconfig" / "libargon2.pc").write_text(
        "Name: libargon2\nVersion: 0\nLibs: -L${libdir} -largon2\nCflags: -I${includedir}\n")
    (lib / "pkgconfig" / "argon2-macros.pc").write_text(
        "Name: argon2-macros\nVersion: 0\nCflags: -DARGON2\n")
    deb = tmp_path / "libargon2-dev_0_amd64.deb"
    subprocess.run(["dpkg-deb", "-b", str(root), str(deb)], check=True, capture_output=True)
    monkeypatch.setattr(archive, "download", lambda p: deb)
    built = debbuild._headers(pkg)
    got = sorted(f.relative_to(built.prefix).as_posix() for f in built.prefix.rglob("*")
                 if f.is_file())
    assert got == [".ukl-headers-done", "usr/include/argon2.h",
                   "usr/lib/x86_64-linux-gnu/pkgconfig/argon2-macros.pc"]


def test_a_failed_builds_reason_is_its_first_telling_line() -> None:
    log = ("checking for gcc... ukl-cc\n"
           "make[3]: Entering directory 'x'\n"
           "ukl lint: /tmp/ukl-cc-e8/user.o: 3 problem(s)\n"
           "  /tmp/ukl-cc-e8/user.o: sha256_block_data_order_avx2: red-zone access "
           "`mov %rdi,-0x8(%rsp)` at 0x94c42; build with -mno-red-zone\n"
           "ukl-cc: error: the program failed `ukl lint`\n"
           "src/a.c:3:10: fatal error: sasl/sasl.h: No such file or directory\n")
    assert rules.failure_reason(log) == (
        "ukl lint: sha256_block_data_order_avx2: red-zone access `mov %rdi,-0x8(%rsp)` at "
        "0x94c42; build with -mno-red-zone")
    assert rules.failure_reason(
        "x.o:(.data+0x2b0): undefined reference to `plain_server_plug_init'\n"
        "collect2: error: ld returned 1 exit status\nukl-cc: error: exit status 1\n") == \
        "undefined reference to `plain_server_plug_init'"
    assert rules.failure_reason("configure: error: libevent is required\n") == \
        "configure: error: libevent is required"
    assert rules.failure_reason(
        "configure: error: in `/b/dbus/debian/build-main':\n"
        "configure: error: C compiler cannot create executables\n") == \
        "configure: error: C compiler cannot create executables"
    assert rules.failure_reason("make: *** [all] Error 2\n") is None
    # configure's own test programs fail as its answers (unbound's log
    # shows config.log after its real error).
    assert rules.failure_reason(
        "checking for libexpat... configure: error: Could not find libexpat, expat.h\n"
        "conftest.c:48:10: fatal error: minix/config.h: No such file or directory\n") == \
        "configure: error: Could not find libexpat, expat.h"
    assert rules.failure_reason(
        "make[2]: [Makefile:873: libtic.so.6.4] Error 1 (ignored)\n"
        "strip: 'debian/libncurses-dev/usr/lib/x86_64-linux-gnu/libncurses++w.a': No such file\n"
        "make: *** [debian/rules:501: binary-arch] Error 1\n") == (
        "strip: 'debian/libncurses-dev/usr/lib/x86_64-linux-gnu/libncurses++w.a': No such file")


def test_a_library_that_failed_is_not_built_again_in_the_same_run(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from ukl.app.debian import build as debbuild
    monkeypatch.setattr(debbuild, "_FAILED_LIBRARIES", {})
    ssl = archive.BinaryPackage("libssl-dev", "1", "openssl")
    monkeypatch.setattr(libdeps, "classify_all", lambda deps: [
        libdeps.Dependency("libssl-dev", "library", ssl)])
    tries: list[str] = []

    def build(src: str, **kwargs: object) -> debbuild.Built:
        tries.append(src)
        raise UklError("debian/rules openssl failed: ukl lint: red-zone access")
    monkeypatch.setattr(debbuild, "build", build)
    for program in ("curl", "unbound"):
        ctl = control.Control(program, "1", [], [program], [program])
        _, left, _ = debbuild._library_deps(ctl, (program,), None)
        assert [d.why for d in left] == ["debian/rules openssl failed: ukl lint: red-zone access"]
    assert tries == ["openssl"]


def test_a_resumed_build_that_fails_is_built_again_from_the_start() -> None:
    from ukl.app.debian import build as debbuild
    calls: list[str] = []

    def build(resume: bool) -> None:
        calls.append(f"build resume={resume}")
        if resume:
            raise UklError("strip: libncurses++w.a: No such file")
    debbuild.resume_or_restart(True, "ncurses", build, lambda: calls.append("fresh tree"))
    assert calls == ["build resume=True", "fresh tree", "build resume=False"]
    calls.clear()

    def broken(resume: bool) -> None:
        calls.append(f"build resume={resume}")
        raise UklError("configure: error: no tgetent")
    with pytest.raises(UklError, match="tgetent"):
        debbuild.resume_or_restart(False, "readline", broken, lambda: calls.append("fresh"))
    assert calls == ["build resume=False"]


def test_a_failed_build_is_tried_again_without_the_packages_needing_what_was_left_out(
        ) -> None:
    from ukl.app.debian import build as debbuild
    from ukl.app.debian import features
    calls: list[str] = []

    def build(resume: bool, off: features.Off) -> None:
        calls.append(f"build skip={','.join(off.skip)}")
        if not off.skip:
            raise UklError("dnsmasq.h:10: fatal error: lua.h: No such file or directory")
    debbuild.build_with_retries("dnsmasq", False, features.Off(missing_ok=True), build,
                                lambda: calls.append("fresh"), lambda: ["dnsmasq-base-lua"])
    assert calls == ["build skip=", "fresh", "build skip=dnsmasq-base-lua"]
    calls.clear()
    with pytest.raises(UklError, match="lua.h"):
        debbuild.build_with_retries("dnsmasq", False, features.Off(), build,
                                    lambda: calls.append("fresh"), lambda: [])
    assert calls == ["build skip="]


def test_what_configure_names_goes_off_too_and_is_reported() -> None:
    """lighttpd with sqlite and libxml2 left out: configure then stops at
    --with-webdav-props, which needs them, and at --with-webdav-locks,
    which needs that; each goes off in turn, in a fresh build."""
    from ukl.app.debian import build as debbuild
    from ukl.app.debian import features
    options = frozenset({"with_webdav_props", "with_webdav_locks", "with_sqlite", "with_pcre2"})
    left = features.switches_off(set(options), [("libsqlite3-dev", "sqlite3")])
    off = features.Off(features.site_text(left), (), True, left)
    errors = {
        "": "configure: error: --with-webdav-props requires sqlite",
        "with_webdav_props": "configure: error: --with-webdav-locks requires "
                             "--with-webdav-props",
    }
    calls: list[str] = []

    def build(resume: bool, how: features.Off) -> None:
        asked = [sw.variable for sw in how.switches.get(features.ASKED, [])]
        calls.append(",".join(asked))
        assert "with_sqlite=no" in how.site
        if not asked or asked == ["with_webdav_props"]:
            raise UklError(f"debian/rules lighttpd failed: {errors[','.join(asked)]}; full log: "
                           "x (built without libsqlite3-dev (turned off: --without-sqlite))")
    final = debbuild.build_with_retries("lighttpd", False, off, build, lambda: None,
                                        lambda: [], options=options)
    assert calls == ["", "with_webdav_props", "with_webdav_props,with_webdav_locks"]
    assert [sw.option for sw in final.switches[features.ASKED]] == [
        "--without-webdav-props", "--without-webdav-locks"]
    assert "with_webdav_props=no\nwith_webdav_locks=no" in final.site
    assert debbuild._asked_lines(final) == [
        "webdav-props, webdav-locks (turned off: --without-webdav-props --without-webdav-locks): "
        "its configure requires what was left out"]


def test_a_configure_error_naming_no_switch_of_its_own_fails() -> None:
    from ukl.app.debian import build as debbuild
    from ukl.app.debian import features
    messages: list[str] = []

    def build(resume: bool, how: features.Off) -> None:
        raise UklError(messages[-1])
    # Not its option; no option named; and, with nothing left out, a
    # complaint that is the package's own.
    for message, off in (("configure: error: --with-foo requires bar", True),
                         ("configure: error: C compiler cannot create executables", True),
                         ("configure: error: --with-bar requires baz", False)):
        messages.append(message)
        with pytest.raises(UklError):
            debbuild.build_with_retries("x", False, features.Off(missing_ok=off), build,
                                        lambda: None, lambda: [],
                                        options=frozenset({"with_bar"}))


NETTLE_PC = """libdir=/deps/usr/lib
Name: Nettle
Description: low-level cryptographic library
Version: 3.8.1
Libs: -L${libdir} -lnettle
"""
HOGWEED_PC = """libdir=/deps/usr/lib
Name: Hogweed
Description: public-key algorithms
Version: 3.8.1
Requires.private: nettle
Libs: -L${libdir} -lhogweed
Libs.private: -lgmp
"""


def test_pkg_config_answers_for_a_static_link(tmp_path: Path) -> None:
    # dnsmasq asks for `nettle hogweed`: for a shared link that is
    # -lnettle -lhogweed, which a static link cannot resolve (hogweed
    # uses nettle's sha3 and gmp).
    pc = tmp_path / "pc"
    pc.mkdir()
    (pc / "nettle.pc").write_text(NETTLE_PC)
    (pc / "hogweed.pc").write_text(HOGWEED_PC)
    shims = rules.compiler_shims(tmp_path / "compilers", "/x/ukl-cc", "/x/ukl-c++")
    for name in ("pkg-config", "x86_64-linux-gnu-pkg-config"):
        out = subprocess.run([str(shims / name), "--libs", "nettle", "hogweed"],
                             env={"PKG_CONFIG_LIBDIR": str(pc), "PATH": os.defpath},
                             capture_output=True, text=True, check=True).stdout.split()
        assert "-lgmp" in out, out
        assert out.index("-lhogweed") < len(out) - 1 - out[::-1].index("-lnettle"), out


def test_a_ukl_program_is_built_again_with_another_toolchain(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A UKL program's link holds the UKL C library: another libc.a makes
    another build state (whatever built it: the toolchain cache's key is
    not enough, a toolchain built with UKL_NO_CACHE=1 has none). A
    library's static archive does not hold it, and neither does a program
    built for the stock kernel."""
    from ukl.app import unikernel
    from ukl.app.debian import build as debbuild
    from ukl.app.debian import recipe
    from ukl.toolchain import layout

    monkeypatch.setenv("UKL_BUILD_DIR", str(tmp_path / "build"))
    libc = layout.libdir() / "libc.a"
    libc.parent.mkdir(parents=True)
    rec = recipe.load("hello")
    ukl_cc = str(unikernel.compiler_path(False))

    def states() -> tuple[str, str, str]:
        return (debbuild._state(rec, ukl_cc, [], program=True),
                debbuild._state(rec, ukl_cc, [], program=False),
                debbuild._state(rec, "gcc", [], program=True))

    libc.write_bytes(b"one")
    before = states()
    libc.write_bytes(b"two")
    after = states()
    assert before[0] != after[0]
    assert before[1:] == after[1:]
    assert states() == after


def test_an_interrupted_dpkg_is_finished_before_installing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """apt refuses every install after one stopped part way until
    `dpkg --configure -a` runs: it runs once, and the install again."""
    monkeypatch.setenv("UKL_BUILD_DIR", str(tmp_path / "build"))
    monkeypatch.setattr(archive.packages, "installed", lambda names: set())
    monkeypatch.setattr(archive.os, "geteuid", lambda: 0)
    ran: list[str] = []

    def fake_run(cmd: list[str], *, label: str, log_path: Path, **kw: object) -> None:
        ran.append(cmd[0] if cmd[0] == "dpkg" else "apt-get install")
        log_path.parent.mkdir(parents=True, exist_ok=True)
        if ran == ["apt-get install"]:
            with log_path.open("a") as f:
                f.write(f"E: {archive.DPKG_INTERRUPTED} to correct the problem.\n")
            raise UklError("apt-get install failed")
    monkeypatch.setattr(archive, "run_logged", fake_run)
    archive.install(["libtool-bin"], "building x")
    assert ran == ["apt-get install", "dpkg", "apt-get install"]
    # Another failure is not dpkg's: no second try.
    ran.clear()
    (tmp_path / "build" / "logs" / "apt-install.log").write_text("")

    def failing(cmd: list[str], *, label: str, log_path: Path, **kw: object) -> None:
        ran.append(cmd[0])
        raise UklError("E: Unable to locate package nothing")
    monkeypatch.setattr(archive, "run_logged", failing)
    with pytest.raises(UklError):
        archive.install(["nothing"], "building x")
    assert ran == ["apt-get"]


def test_a_metapackage_stands_for_what_it_depends_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """valgrind-if-available (Python's build dependency) ships only its
    documentation and depends on valgrind, whose <valgrind/valgrind.h>
    Python's --with-valgrind includes."""
    graph = {"valgrind-if-available": archive.BinaryPackage(
                 "valgrind-if-available", "1", "valgrind-if-available", ("valgrind",)),
             "valgrind": archive.BinaryPackage("valgrind", "1", "valgrind", ())}
    monkeypatch.setattr(archive, "show", graph.get)
    monkeypatch.setattr(archive, "contents", lambda pkg: {
        "valgrind-if-available": ["", "usr/", "usr/share/doc/valgrind-if-available/copyright"],
        "valgrind": ["usr/bin/valgrind", "usr/include/valgrind/valgrind.h"]}[pkg.name])
    dep = libdeps.classify(["valgrind-if-available"])
    assert (dep.name, dep.kind, dep.source) == ("valgrind-if-available", "headers", "valgrind")


def test_a_fresh_build_keeps_the_previous_builds_log(tmp_path: Path) -> None:
    """A retry starts a new tree and a new log: the failed build's log is
    kept beside it, as NAME.previous.log."""
    from ukl.app.debian import build as debbuild
    from ukl.app.debian import recipe
    source = tmp_path / "src"
    source.mkdir()
    (source / "f").write_text("x")
    log = tmp_path / "debian-demo-ukl.log"
    log.write_text("configure: error: the first failure\n")
    work = tmp_path / "work"
    debbuild._fresh_tree(recipe.load("hello"), source, work, work / "tree", log, True, "s")
    assert not log.exists()
    assert (tmp_path / "debian-demo-ukl.previous.log").read_text() == \
        "configure: error: the first failure\n"
    assert (work / "tree" / "f").read_text() == "x"


def test_a_dev_package_beside_its_shared_library_is_not_static_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # tk8.6-dev ships libtkstub8.6.a and no .so, but depends on libtk8.6:
    # what links Tk shows it in its Depends, unlike uthash's libut.a.
    pkgs = {"tk8.6-dev": archive.BinaryPackage("tk8.6-dev", "1", "tk8.6", ("libtk8.6",),
                                               "libdevel"),
            "libtk8.6": archive.BinaryPackage("libtk8.6", "1", "tk8.6", (), "libs"),
            "uthash-dev": archive.BinaryPackage("uthash-dev", "1", "uthash", (), "devel")}
    monkeypatch.setattr(archive, "show", lambda name: pkgs.get(name))
    assert libdeps._has_shared(pkgs["tk8.6-dev"], ["usr/lib/x86_64-linux-gnu/libtkstub8.6.a"])
    assert not libdeps._has_shared(pkgs["uthash-dev"], ["usr/lib/x86_64-linux-gnu/libut.a"])
    assert libdeps._has_shared(pkgs["uthash-dev"], ["usr/lib/x86_64-linux-gnu/libut.so"])


def test_a_staged_link_to_nothing_is_not_installed(tmp_path: Path) -> None:
    # python3.11's debug headers are a link into libpython3.11-dbg, which
    # a build that skipped that package never made.
    inc = tmp_path / "debian" / "libpython3.11-dev" / "usr" / "include"
    (inc / "python3.11").mkdir(parents=True)
    (inc / "python3.11" / "Python.h").write_text("")
    (inc / "python3.11d").mkdir()
    (inc / "python3.11d" / "Python.h").symlink_to("../../../libpython3.11-dbg/Python.h")
    dest = tmp_path / "install"
    rules.install_library(tmp_path, ["libpython3.11-dev"], dest)
    assert (dest / "usr/include/python3.11/Python.h").is_file()
    assert not (dest / "usr/include/python3.11d/Python.h").exists()


def test_a_program_with_its_extensions_linked_in_links_what_they_link(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # perl-base's perl links libcrypt only; Compress::Raw::Bzip2, in
    # libperl5.36, links libbz2, and a UKL perl has it linked in.
    from ukl.app.debian import build as debbuild
    links = {"perl-base": {"perl", "libxcrypt"}, "libperl5.36": {"perl", "bzip2", "zlib"},
             "perl": {"perl"}}
    monkeypatch.setattr(archive, "link_sources", lambda name: frozenset(links[name]))
    ctl = control.Control("perl", "1", [], ["perl-base", "libperl5.36", "perl"],
                          ["perl-base", "libperl5.36", "perl"])
    assert debbuild._links(ctl, False, None, "perl-base") == {"perl", "libxcrypt"}
    assert debbuild._links(ctl, False, None, "perl-base", extensions_linked_in=True) == {
        "perl", "libxcrypt", "bzip2", "zlib"}


def test_binding_profiles_are_read_from_restrictions_not_version_limits() -> None:
    text = ("Build-Depends: libfoo-dev (<< 2.0), python3-dev <!nopython>,\n"
            " ruby-dev <noruby>, libbar-dev (>= 1) <!nocheck !nojava>\n")
    # nopython and nojava build less; <noruby> would build more.
    assert control.lean_profiles(text, "demo") == {"nopython", "nojava"}


def test_a_finished_library_build_keeps_its_install_not_its_tree(tmp_path: Path) -> None:
    # OpenSSL's library build tree is 8 GB; its dependents link the
    # install. A program's tree stays: its program and data are read there.
    from ukl.app.debian import build as debbuild
    for library in (True, False):
        work = tmp_path / ("lib" if library else "program")
        (work / "tree" / "debian").mkdir(parents=True)
        debbuild._record_built(work, "state-1", work / "tree", library)
        assert (work / debbuild.BUILT_STAMP).read_text() == "state-1"
        assert (work / "tree").is_dir() != library


# chrpath as it answers -d: a static program has no dynamic section (two
# lines, exit 1); a file it cannot read is another error.
FAKE_CHRPATH = """#!/bin/sh
case "$(cat "$2")" in
static) echo "No dynamic section found."; echo "found no dynamic section: Success" >&2; exit 1 ;;
dynamic) echo "$2: RUNPATH=/x"; echo "$2: new RUNPATH: "; exit 0 ;;
*) echo "elf_open: Invalid argument" >&2; exit 1 ;;
esac
"""


def test_chrpath_has_no_run_path_to_delete_from_a_static_program(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """sqlite3's rules run `chrpath -d usr/bin/sqlite3`; a UKL program is
    static, with no dynamic section: nothing to delete is success. Any
    other failure stays one."""
    from ukl.app.debian import rules
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "chrpath").write_text(FAKE_CHRPATH)
    (bin_dir / "chrpath").chmod(0o755)
    monkeypatch.setattr(rules, "DEBIAN_BUILD_PATH", f"{bin_dir}:/usr/bin:/bin")
    shims = rules.compiler_shims(tmp_path / "shims", "cc", "c++")
    for kind, status in (("static", 0), ("dynamic", 0), ("text", 1)):
        (tmp_path / kind).write_text(kind + "\n")
        done = subprocess.run([str(shims / "chrpath"), "-d", str(tmp_path / kind)],
                              capture_output=True, text=True)
        assert done.returncode == status, (kind, done.stdout)
    assert "No dynamic section found." in subprocess.run(
        [str(shims / "chrpath"), "-d", str(tmp_path / "static")],
        capture_output=True, text=True).stdout
