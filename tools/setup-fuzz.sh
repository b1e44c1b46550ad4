#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs what the `fuzz` preset needs on a fresh Debian 12 machine (as root):
# clang 14 with its libFuzzer and sanitizer runtimes, on top of setup-debian.sh.
set -eu
sh "$(dirname "$0")/setup-debian.sh"
packages="clang-14 libclang-rt-14-dev"
sh "$(dirname "$0")/install-missing.sh" setup-fuzz $packages
