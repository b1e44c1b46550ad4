#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs what a fresh Debian 12 machine (run as root) lacks to build and test
# every cross target: aarch64, armhf and s390x (GCC cross compilers, oneTBB
# from Debian multiarch, qemu-user), MinGW-w64 under wine, and clang-16 for the
# console profile. Also runs tools/setup-debian.sh for the native build.
# Does nothing when everything is already there. See toolchains/README.md.
set -eu
here=$(dirname "$0")
sh "$here/setup-debian.sh"

arches="arm64 armhf s390x"
foreign=$(dpkg --print-foreign-architectures)
for a in $arches; do
    case " $(echo $foreign) " in
    *" $a "*) ;;
    *) dpkg --add-architecture "$a" ;;
    esac
done

packages="qemu-user g++-aarch64-linux-gnu g++-arm-linux-gnueabihf g++-s390x-linux-gnu \
g++-mingw-w64-x86-64-posix wine wine64 clang-16 \
libtbb-dev:arm64 libtbb-dev:armhf libtbb-dev:s390x"
sh "$here/install-missing.sh" setup-cross $packages
