"""The build pipeline: a program (sources, a Makefile project or a Debian
package) and a kernel flavour -> an image. `ukl build`, `ukl image create`,
`ukl bench`, `ukl bench-apps` and `ukl matrix` all make their images here.

On a UKL flavour the program is built with the UKL toolchain and linked into
vmlinux (mode "ukl"); on any other flavour it is an ordinary static process
in the initramfs (mode "process").
"""
from __future__ import annotations

import sys
from pathlib import Path

from ukl.app import unikernel
from ukl.app import process
from ukl.app.debian import build as debbuild
from ukl.app.debian import prepare, recipe
from ukl.app.debian import source as debsrc
from ukl.common.errors import UklError, UsageError
from ukl.image import image
from ukl.image.initramfs import AppUser, InitramfsSpec
from ukl.kbuild import build as kbuild
from ukl.kbuild.flavour import Flavour
from ukl.toolchain import lint


def image_from_program(name: str, flavour: Flavour, spec: InitramfsSpec,
                       build_as: str | None = None) -> image.Image:
    """An image of an existing static program (spec.program; none: a
    shell) on `flavour`'s kernel, as an ordinary process."""
    vmlinux = kbuild.build(flavour, build_as=build_as, snapshot=image.staged_kernel(name))
    return image.create(name, vmlinux, flavour.name, spec)


def build_image(name: str, flavour: Flavour, sources: list[Path], spec: InitramfsSpec,
                binary: str | None = None, build_as: str | None = None) -> image.Image:
    """Build `sources` (C/C++ files, or one directory with a Makefile) into
    image `name` on `flavour`. `spec` gives the extra files and helpers; its
    program is filled in here. `build_as`: the kernel's output directory, if
    not the flavour's own (kbuild.build)."""
    project = sources[0] if len(sources) == 1 and sources[0].is_dir() else None
    if binary and project is None:
        raise UsageError("--binary applies to a Makefile directory, not to source files")
    if not flavour.is_ukl:
        spec.program = (unikernel.build_project(project, name, binary, ukl=False) if project
                        else process.compile_static(sources, name))
        return image_from_program(name, flavour, spec, build_as)
    if project:
        linked = unikernel.build_project(project, name, binary, ukl=True)
        app = unikernel.kernel_object(linked, unikernel.app_dir(name) / f"{name}.ukl.o")
    else:
        app = unikernel.compile_app(sources, name)
    return _ukl_image(name, flavour, app, spec, build_as)


def build_debian_image(name: str, flavour: Flavour, package: str, spec: InitramfsSpec,
                       binary: str | None = None,
                       without: frozenset[str] = frozenset(),
                       own_recipe: bool = True) -> image.Image:
    """Build Debian source package `package` (ukl.app.debian) into image
    `name`: its program linked into the kernel on a UKL flavour, an ordinary
    process otherwise; the recipe's tools, built as ordinary static
    programs, go to /usr/bin beside it, and its default arguments into the
    image. The files its prepare script makes on the host join them
    (ukl.app.debian.prepare), and the program runs as the recipe's user.
    `without`: library build dependencies a UKL build goes without.
    `own_recipe=False`: recipes/PACKAGE.ini is not read, Debian's own build
    makes the program (ukl catalog)."""
    rec = recipe.load(package) if own_recipe else recipe.Recipe(package)
    if without and not flavour.is_ukl:
        raise UsageError("--without applies to UKL builds: an ordinary process links the "
                         "host's libraries")
    if without and rec.system not in ("auto", "debian"):
        raise UsageError(f"--without applies to Debian's own build; recipes/{package}.ini "
                         f"builds it with `system = {rec.system}`")
    if rec.library:
        raise UklError(f"{package} is a library (recipes/{package}.ini); build the "
                       "application that uses it")
    built = debbuild.build(package, ukl=flavour.is_ukl, binary=binary, leave_out=without,
                           own_recipe=own_recipe)
    for left_out in built.without:
        print(f"ukl: {package} built without {left_out}", file=sys.stderr)
    for name in debbuild.unmatched(without):
        print(f"ukl: warning: --without {name}: no library build dependency of {package} "
              "or of the libraries built for it has that name", file=sys.stderr)
    # An ordinary process from Debian's build is linked dynamically, as
    # Debian's own binary is: its libraries go into the image.
    spec.files += list(built.runtime)
    spec.package_trees += list(built.data)
    tools = (debbuild.build(package, ukl=False, own_recipe=own_recipe).tools
             if flavour.is_ukl and rec.tools
             else built.tools)
    spec.files += [(t, f"/usr/bin/{t.name}") for t in tools] + rec.files
    spec.default_args = rec.args
    spec.default_env = rec.env
    if rec.user:
        spec.user = AppUser(rec.user)
    spec.program_link = rec.path
    root = prepare.prepare(rec, debsrc.fetch(package))
    if root is not None:
        spec.trees += [(top, f"/{top.name}") for top in sorted(root.iterdir())]
    if built.program is None:
        raise UklError(f"{package}: its build made no program to run")
    if not flavour.is_ukl:
        spec.program = built.program
        return image_from_program(name, flavour, spec)
    app = unikernel.kernel_object(built.program, unikernel.app_dir(name) / f"{name}.ukl.o")
    return _ukl_image(name, flavour, app, spec, None)


def _check_red_zone(flavour: Flavour, app: Path) -> None:
    """Refuse an application that keeps data in the red zone for a kernel
    whose options write there (kernel/options.ini `red-zone = no`; see
    ukl.toolchain.lint)."""
    writers = [o.config for o in flavour.options if not o.red_zone]
    if not writers:
        return
    found = lint.red_zone(app)
    if found:
        raise UklError(
            f"kernel {flavour.name}: the application keeps data below its stack pointer "
            f"(the red zone: {found[0].where}, {len(found)} access(es) in all), which "
            f"the kernel's {' and '.join(writers)} write(s) over; link it into a kernel "
            "without that (--kernel ukl)",
            detail=lint.report(app, found, limit=20, what="red-zone access(es)"))


def _ukl_image(name: str, flavour: Flavour, app: Path, spec: InitramfsSpec,
               build_as: str | None) -> image.Image:
    """Link the application object into the flavour's kernel; the image's
    init execs the path that starts it."""
    _check_red_zone(flavour, app)
    vmlinux = kbuild.build(flavour, ukl_app=app, build_as=build_as,
                           snapshot=image.staged_kernel(name))
    spec.ukl_exec = flavour.exec_name
    return image.create(name, vmlinux, flavour.name, spec, mode="ukl")
