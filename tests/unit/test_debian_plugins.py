"""Loadable modules left out of a UKL build (ukl/app/debian/plugins.py)."""
from __future__ import annotations

import subprocess
from pathlib import Path

from ukl.app.debian import plugins

NGINX_LIKE_RULES = """\
bin_configure_flags := \\
\t\t\t--with-http_sub_module \\
\t\t\t--with-http_geoip_module=dynamic \\
\t\t\t--with-mail=dynamic \\
\t\t\t--add-dynamic-module=$(MODULESDIR)/http-echo \\
\t\t\t--with-stream_geoip_module=dynamic

config.arch.%:
\tcd $(BUILDDIR_$*) && ./configure $($*_configure_flags) --with-pcre-jit
"""


def test_nginx_style_loadable_modules_are_dropped_from_the_rules(tmp_path: Path) -> None:
    (tmp_path / "debian").mkdir()
    rules = tmp_path / "debian" / "rules"
    rules.write_text(NGINX_LIKE_RULES)
    options = ["--with-http_geoip_module=dynamic", "--with-mail=dynamic",
               "--add-dynamic-module=$(MODULESDIR)/http-echo",
               "--with-stream_geoip_module=dynamic"]
    assert plugins.loadable_options(tmp_path) == options
    assert plugins.drop_loadable_options(tmp_path) == options
    text = rules.read_text()
    assert "dynamic" not in text
    # What the program is built with stays, and the make syntax holds.
    assert "--with-http_sub_module \\\n" in text and "--with-pcre-jit" in text
    assert plugins.loadable_options(tmp_path) == []
    assert "cannot load a shared object" in plugins.report_line(options)


def test_options_that_only_mention_dynamic_are_kept(tmp_path: Path) -> None:
    (tmp_path / "debian").mkdir()
    (tmp_path / "debian" / "rules").write_text(
        "CONFIGURE = --enable-dynamic=yes --with-foo=dynamically --with-bar=dynamic-ish\n")
    assert plugins.loadable_options(tmp_path) == []


PHP_LIKE_RULES_D = """\
ext_PACKAGES     += imap
imap_config      := --with-imap=shared,/usr \\
\t            --with-kerberos \\
\t            --with-imap-ssl=yes
ctype_config = --enable-ctype=shared
pdo_odbc_config  := --with-pdo-odbc=shared,unixODBC,/usr
"""
PHP_LIKE_RULES = """\
export cli_config = \\
\t\t--prefix=/usr --enable-cli \\
\t\t--enable-pcntl \\
\t\t--with-libedit=shared,/usr

include $(CURDIR)/debian/rules.d/*.mk
"""


def test_php_style_shared_extensions_are_dropped_from_rules_and_rules_d(
        tmp_path: Path) -> None:
    (tmp_path / "debian" / "rules.d").mkdir(parents=True)
    rules = tmp_path / "debian" / "rules"
    rules.write_text(PHP_LIKE_RULES)
    imap = tmp_path / "debian" / "rules.d" / "ext-imap.mk"
    imap.write_text(PHP_LIKE_RULES_D)
    # Without PHP's configure, `=shared` means nothing in particular.
    assert plugins.loadable_options(tmp_path) == []
    (tmp_path / "configure").write_text("#! /bin/sh\n  ext_shared=yes\n")
    options = ["--with-libedit=shared,/usr", "--with-imap=shared,/usr",
               "--enable-ctype=shared", "--with-pdo-odbc=shared,unixODBC,/usr"]
    assert plugins.loadable_options(tmp_path) == options
    assert plugins.drop_loadable_options(tmp_path) == options
    assert "shared" not in rules.read_text() + imap.read_text()
    # The program's own options stay, and so does the make syntax.
    assert "--enable-pcntl \\\n" in rules.read_text()
    assert "--with-kerberos \\\n" in imap.read_text()
    shown = subprocess.run(["make", "-s", "-C", str(tmp_path), "-f", "debian/rules",
                            "--eval", "show: ; @echo $(cli_config) / $(imap_config)", "show"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert shown == ["--prefix=/usr", "--enable-cli", "--enable-pcntl", "/",
                     "--with-kerberos", "--with-imap-ssl=yes"]
    assert plugins.loadable_options(tmp_path) == []


def test_a_long_list_of_modules_is_reported_shortly() -> None:
    line = plugins.report_line([f"--enable-e{i}=shared" for i in range(50)])
    assert "--enable-e0=shared" in line and "and 44 more" in line
    assert "--enable-e49=shared" not in line


def test_packages_of_modules_only() -> None:
    assert plugins.is_module_package([
        "usr/", "usr/lib/nginx/modules/ngx_mail_module.so",
        "usr/share/nginx/modules-available/mod-mail.conf", "usr/share/doc/x/copyright"])
    # The program's own package, a library's, a package of no module.
    assert not plugins.is_module_package(["usr/sbin/nginx", "usr/lib/nginx/modules/a.so"])
    assert not plugins.is_module_package(["usr/lib/x86_64-linux-gnu/libfoo.so.1",
                                          "usr/lib/foo/plugin.so"])
    assert not plugins.is_module_package(["usr/share/doc/nginx-extras/copyright"])


def test_perls_configure_links_its_extensions_in(tmp_path: Path) -> None:
    # Perl's own build runs the perl it built, which loads Cwd.so with
    # DynaLoader; a UKL build's hints turn dynamic loading off.
    (tmp_path / "debian").mkdir()
    (tmp_path / "debian" / "rules").write_text("%:\n\tdh $@\n")
    (tmp_path / "Configure").write_text('rp="Do you wish to use dynamic loading?"\n')
    (tmp_path / "hints").mkdir()
    hints = tmp_path / "hints" / "linux.sh"
    hints.write_text("usemymalloc='n'\n")
    assert plugins.loadable_options(tmp_path) == [plugins.NO_DYNAMIC_LOADING]
    assert plugins.drop_loadable_options(tmp_path) == [plugins.NO_DYNAMIC_LOADING]
    plugins.drop_loadable_options(tmp_path)
    assert hints.read_text().count("dynamic_ext=") == 1
    sourced = subprocess.run(["sh", "-c", f". {hints}; echo $dynamic_ext"],
                             capture_output=True, text=True, check=True).stdout
    assert sourced.strip() == "none"
    # A DEBUGGING perl goes without re (its functions clash with perl's);
    # others keep it. Configure sources config.over after every answer.
    over = tmp_path / "config.over"
    assert over.read_text().count("Perl_re_printf") == 1
    for ccflags, want in (("-O2 -DDEBUGGING -g", "B Cwd"), ("-O2", "B re Cwd")):
        script = (f'ccflags="{ccflags}"; static_ext="B re Cwd"; extensions="$static_ext"; '
                  f'. {over}; echo "$static_ext|$extensions"')
        got = subprocess.run(["sh", "-c", script], capture_output=True, text=True,
                             check=True).stdout.strip()
        assert got == f"{want}|{want}"
    # Install lists go without the extensions' shared objects, which a perl
    # with its extensions linked in does not make; the script keeps its mode.
    listing = tmp_path / "debian" / "perl-base.install"
    listing.write_text("#!/bin/sh\nwhile read f; do :; done <<EOF\nPOSIX.pm\nauto/Cwd\n"
                       "auto/POSIX/POSIX.so\nauto/Hash/Util/Util.so\nEOF\n")
    listing.chmod(0o755)
    plain = tmp_path / "debian" / "libperl5.36.install"
    plain.write_text("usr/lib/${DEB_HOST_MULTIARCH}/libperl.so.${env:fullversion}\n")
    plugins.drop_loadable_options(tmp_path)
    assert listing.read_text() == ("#!/bin/sh\nwhile read f; do :; done <<EOF\nPOSIX.pm\n"
                                   "auto/Cwd\nEOF\n")
    assert listing.stat().st_mode & 0o777 == 0o755
    assert plain.read_text() == "usr/lib/${DEB_HOST_MULTIARCH}/libperl.so.${env:fullversion}\n"
    assert "perl's extensions are linked into it" in plugins.report_line(
        [plugins.NO_DYNAMIC_LOADING])
    # Not perl's Configure: nothing to do.
    (tmp_path / "Configure").write_text("#!/bin/sh\n")
    assert plugins.loadable_options(tmp_path) == []
