#!/bin/sh
# Installs what a fresh Debian 12 machine (run as root) lacks to build and test
# every cross target: aarch64, armhf and s390x (GCC cross compilers, oneTBB
# from Debian multiarch, qemu-user), MinGW-w64 under wine, and clang-16 for the
# console profile. Also runs tools/setup-debian.sh for the native build.
# Does nothing when everything is already there. See toolchains/README.md.
set -eu
here=$(dirname "$0")
sh "$here/setup-debian.sh"

export DEBIAN_FRONTEND=noninteractive
arches="arm64 armhf s390x"
foreign=$(dpkg --print-foreign-architectures)
added=""
for a in $arches; do
    case " $(echo $foreign) " in
    *" $a "*) ;;
    *) dpkg --add-architecture "$a"; added="$added $a" ;;
    esac
done

packages="qemu-user g++-aarch64-linux-gnu g++-arm-linux-gnueabihf g++-s390x-linux-gnu \
g++-mingw-w64-x86-64-posix wine wine64 clang-16 \
libtbb-dev:arm64 libtbb-dev:armhf libtbb-dev:s390x"
# With foreign architectures added, a package installed for several of them
# needs the native qualifier for dpkg -s.
native=$(dpkg --print-architecture)
missing=""
for p in $packages; do
    dpkg -s "$p" >/dev/null 2>&1 || dpkg -s "$p:$native" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ] || [ -n "$added" ]; then
    echo "setup-cross: installing$missing"
    # With foreign architectures, a security index may be mid-sync and make
    # update exit 100 for hours; the install below is what must succeed.
    apt-get update -qq || true
    if [ -n "$missing" ]; then
        apt-get install -y -qq --no-install-recommends $missing >/dev/null
    fi
fi
