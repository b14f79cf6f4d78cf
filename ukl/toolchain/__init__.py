"""The UKL toolchain: glibc and the gcc runtime rebuilt for CPL0, ukl-cc/ukl-c++ and the lint."""
