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
