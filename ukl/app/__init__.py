"""Applications: compiled for UKL (the object the kernel link takes) or as
ordinary static processes, from sources, a Makefile project or a Debian
package."""
