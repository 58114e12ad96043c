# SPDX-License-Identifier: MIT
# apt-install.sh - sourced (POSIX sh) by build.sh, tests/cross-aarch64.sh and
# tests/wasm-build-and-test.sh, which install what they need on Debian.
#
#   as_root WHO COMMAND...     runs COMMAND as root: directly, or through sudo;
#                              without either it says what to do and fails
#   apt_install WHO PACKAGE... apt-get update + install, quietly: apt's output
#                              goes to a log that is shown only on failure
# WHO names the calling script in messages.

as_root() {
    _who=$1
    shift
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        echo "$_who: needs root to run: $*" >&2
        echo "$_who: there is no sudo here: run $_who as root, or run that command as root first" >&2
        return 1
    fi
}

apt_install() {
    _who=$1
    shift
    if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then
        echo "$_who: these packages are missing: $*" >&2
        echo "$_who: install them as root (apt-get install $*) or run $_who as root" >&2
        return 1
    fi
    echo "$_who: installing: $*"
    _log=$(mktemp) || return 1
    if as_root "$_who" apt-get update -qq >"$_log" 2>&1 &&
        as_root "$_who" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >>"$_log" 2>&1; then
        rm -f "$_log"
        return 0
    fi
    echo "$_who: apt-get failed; its output:" >&2
    cat "$_log" >&2
    rm -f "$_log"
    return 1
}
