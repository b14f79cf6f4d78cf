"""Program -> image: the whole of `ukl build`, for the CLI and `ukl bench`.

On a UKL kernel flavour the program is built with the UKL toolchain and
linked into vmlinux (mode "ukl"); on any other flavour it is an ordinary
static process in the initramfs (mode "process").
"""
from __future__ import annotations

from pathlib import Path

from ukl.common.errors import UklError
from ukl.image import image, ukl_app
from ukl.image.initramfs import InitramfsSpec
from ukl.kernel import build as kbuild
from ukl.kernel import config


def build_image(name: str, flavour_name: str, sources: list[Path], spec: InitramfsSpec,
                binary: str | None = None, build_as: str | None = None) -> image.Image:
    """Build `sources` (C/C++ files, or one directory with a Makefile) into
    image `name` on kernel flavour `flavour_name`. `spec` gives the extra
    files and helpers; its program is filled in here. `build_as`: the
    kernel's output directory, if not the flavour's own (kbuild.build)."""
    flavour = config.get_flavour(flavour_name)
    project = sources[0] if len(sources) == 1 and sources[0].is_dir() else None
    if binary and project is None:
        raise UklError("--binary applies to a Makefile directory, not to source files")
    if not config.is_ukl(flavour):
        from ukl.toolchain import host_cc
        spec.program = (ukl_app.build_project(project, name, binary, ukl=False) if project
                        else host_cc.compile_static(sources, name))
        return image.create(name, kbuild.build(flavour.name, build_as=build_as),
                            flavour.name, spec)
    if project:
        linked = ukl_app.build_project(project, name, binary, ukl=True)
        app = ukl_app.kernel_object(linked, ukl_app.app_dir(name) / f"{name}.ukl.o")
    else:
        app = ukl_app.compile_app(sources, name)
    vmlinux = kbuild.build(flavour.name, ukl_app=app, build_as=build_as)
    spec.ukl_exec = config.ukl_exec_name(flavour)
    return image.create(name, vmlinux, flavour.name, spec, mode="ukl")


def build_debian_image(name: str, flavour_name: str, package: str, spec: InitramfsSpec,
                       binary: str | None = None) -> image.Image:
    """Build Debian source package `package` (ukl.apps) into image `name`:
    its program linked into the kernel on a UKL flavour, an ordinary process
    otherwise; the recipe's tools, built as ordinary static programs, go to
    /usr/bin beside it, and its default arguments into the image."""
    from ukl.apps import debbuild, recipe
    flavour = config.get_flavour(flavour_name)
    ukl = config.is_ukl(flavour)
    rec = recipe.load(package)
    if rec.library:
        raise UklError(f"{package} is a library (apps/debian/{package}.ini); build the "
                       "application that uses it")
    built = debbuild.build(package, ukl=ukl, binary=binary)
    tools = debbuild.build(package, ukl=False).tools if ukl and rec.tools else built.tools
    spec.files += [(t, f"/usr/bin/{t.name}") for t in tools] + rec.files
    spec.default_args = rec.args
    assert built.program is not None
    if not ukl:
        spec.program = built.program
        return image.create(name, kbuild.build(flavour.name), flavour.name, spec)
    app = ukl_app.kernel_object(built.program, ukl_app.app_dir(name) / f"{name}.ukl.o")
    vmlinux = kbuild.build(flavour.name, ukl_app=app)
    spec.ukl_exec = config.ukl_exec_name(flavour)
    return image.create(name, vmlinux, flavour.name, spec, mode="ukl")
