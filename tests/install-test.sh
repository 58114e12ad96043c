#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/install-test.sh - rayo as a distribution ships it, on a fresh Debian 12.
#
# A packager's walkthrough, checked at every step:
#   builds the source package and .debs (packaging/build-debs.sh: from the
#   release tarball, lintian clean) and, alongside, the RPMs
#   (packaging/build-rpms.sh); checks the .debs' metadata (librayo0
#   recommends its architecture's SIMD backend; every export at a RAYO_1.N version;
#   no placeholder left from packaging/project.env);
#   in a fresh Debian 12 chroot (debootstrap --variant=minbase):
#    0. librayo0 alone (with what it depends on) -> /etc/rayo/rayo.conf (its
#       layer list naming $XDG_CONFIG_HOME/rayo/conf.d), rayo.conf(5), the
#       MIT copyright and a changelog that names avx512
#    1. + rayo-tools                    -> scalar only
#    2. + rayo-backend-avx2             -> avx2 first (where the CPU has AVX2)
#    3. + rayo-backend-vulkan, mesa     -> lavapipe ranked below the CPU backends
#       the packages' drop-ins say they live in $datadir/rayo/conf.d
#    4. the autopkgtest build-against (debian/tests) passes; a third-party
#       plugin built from the installed template with
#       pkg-config, installed in the local plugin dir -> loads, conforms;
#       a setuid program does not load it; it ships a drop-in that claims
#       the first place (as a real package once did)
#    5. the administrator's order in /etc/rayo wins over that drop-in, and a
#       same-named file in /etc/rayo/conf.d masks a package's drop-in
#       a user's drop-in in $XDG_CONFIG_HOME/rayo/conf.d is read
#    6. remove and purge rayo-backend-vulkan -> nothing of it left, the rest
#       still works (the autopkgtest conform on what remains)
# and prints the rayo-info summary of each step and the time taken.
#
# Needs root (debootstrap, chroot, mounts) and a configured build tree
# (./build.sh).  The minbase root is cached as a tarball in $RAYO_CHROOT_CACHE
# (default /var/cache/rayo-install-test) so later runs on the same machine
# skip debootstrap; without the cache it is made from nothing.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
start=$(date +%s)
cache=${RAYO_CHROOT_CACHE:-/var/cache/rayo-install-test}
suite=bookworm

elapsed() { echo $(( $(date +%s) - start )); }
step() { echo; echo "==== [$(elapsed) s] $*"; }
fail() { echo "install-test: FAIL: $*"; exit 1; }

if [ "$(id -u)" != 0 ]; then
    echo "SKIP: the install test needs root (debootstrap, chroot)"; exit 77
fi
[ -f "$top/build/Makefile" ] || "$top/build.sh"
. "$top/apt-install.sh"
# Everything the host needs, installed now: the RPM build runs in the
# background later, and its own apt-get would then race the chroot's apt for
# the shared package cache's lock.
command -v debootstrap >/dev/null || apt_install install-test debootstrap
command -v rpmbuild >/dev/null || apt_install install-test rpm

work=$(mktemp -d /tmp/rayo-install-XXXXXX)
root=$work/root
mounts=()
cleanup() {
    for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done
    [ -n "${rpm_pid:-}" ] && kill "$rpm_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# ---- the fresh root (in the background, while the packages build) ----------
mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
make_root() {
    mkdir -p "$root" "$cache"
    if [ -f "$cache/$suite-minbase.tar" ]; then
        echo "fresh root: unpacking the cached minbase $suite ($cache/$suite-minbase.tar)"
        tar -C "$root" -xf "$cache/$suite-minbase.tar"
    else
        echo "fresh root: debootstrap --variant=minbase $suite from $mirror"
        debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
            { tail -20 "$work/debootstrap.log"; return 1; }
        rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb
        tar -C "$root" -cf "$cache/$suite-minbase.tar.tmp" . && mv "$cache/$suite-minbase.tar.tmp" "$cache/$suite-minbase.tar"
    fi
}
# check_debs DIR: what a reviewer reads in the .debs before installing them.
check_debs() {
    local lib rec want
    lib=$(ls "$1"/librayo0_*.deb)
    rec=$(dpkg-deb -f "$lib" Recommends)
    case "$(dpkg --print-architecture)" in amd64) want=rayo-backend-avx2 ;; arm64) want=rayo-backend-neon ;; *) want= ;; esac
    [ "$rec" = "$want" ] || fail "librayo0 recommends '$rec', want '$want'"
    echo "  ok: librayo0 Recommends: ${rec:-nothing on this architecture}"
    dpkg-deb -f "$lib" Depends | grep -q "rayo-common" || fail "librayo0 does not depend on rayo-common"
    mkdir -p "$work/librayo0" && dpkg-deb -x "$lib" "$work/librayo0"
    readelf -W --dyn-syms "$work"/librayo0/usr/lib/*/librayo.so.0 |
        awk '$1 ~ /^[0-9]+:$/ && $7 != "UND" && $7 != "ABS" && $5 != "LOCAL" { print $8 }' >"$work/exports.txt"
    grep -v '^rayo_[a-z0-9_]*@@RAYO_1\.[0-9]*$' "$work/exports.txt" && fail "exports above are not rayo_*@@RAYO_1.N"
    [ "$(wc -l <"$work/exports.txt")" -gt 100 ] || fail "only $(wc -l <"$work/exports.txt") exports"
    echo "  ok: all $(wc -l <"$work/exports.txt") exports of librayo.so.0 are rayo_*@@RAYO_1.N ($(sed "s/.*@@//" "$work/exports.txt" | sort -u | tr "\n" " "))"
    for d in "$1"/*.deb; do
        dpkg-deb -f "$d" Maintainer Homepage | grep -q '@RAYO_\|\.invalid' && fail "$d: placeholder in Maintainer/Homepage"
    done
    echo "  ok: Maintainer and Homepage from packaging/project.env: $(dpkg-deb -f "$lib" Homepage)"
    ls "$1"/rayo_*.dsc >/dev/null || fail "no source package"
}

step "build the packages; meanwhile make a fresh Debian 12 root"
make_root >"$work/root.log" 2>&1 &
root_pid=$!
"$top/packaging/build-debs.sh" "$work/debs"
wait "$root_pid" || { cat "$work/root.log"; fail "could not make the fresh root"; }
cat "$work/root.log"

step "the packages' metadata"
check_debs "$work/debs"

# The RPMs build in the background while the chroot steps run (mostly I/O).
"$top/packaging/build-rpms.sh" "$work/rpms" >"$work/rpms.log" 2>&1 &
rpm_pid=$!

# ---- the chroot -------------------------------------------------------------
rm -f "$root/etc/apt/sources.list"
cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
for m in proc sys dev dev/pts; do
    mount --bind "/$m" "$root/$m"; mounts+=("$root/$m")
done
# Packages already downloaded on this machine are not downloaded again.
mkdir -p /var/cache/apt/archives/partial
mount --bind /var/cache/apt/archives "$root/var/cache/apt/archives"; mounts+=("$root/var/cache/apt/archives")
mkdir -p "$root/tmp/debs" && cp "$work"/debs/*.deb "$root/tmp/debs/"

inroot() {
    chroot "$root" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/root \
        LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive bash -c "$1"
}
apt_install() { inroot "apt-get install -y -qq --no-install-recommends $* >/tmp/apt.log 2>&1 || { tail -20 /tmp/apt.log; exit 1; }"; }
deb() { echo "/tmp/debs/$1_*_$(dpkg --print-architecture).deb"; }

# rayo-info's summary: files read, backends with status, two dispatch chains.
info() {
    inroot "rayo-info $*" >"$work/info.txt" 2>&1 || { cat "$work/info.txt"; fail "rayo-info failed"; }
    awk '/^Config files/ {f = 1} /^Plugin search path/ {f = 0; print} f && NF {print}
         /^Backends:/ {b = 1; next} /^Dispatch/ {b = 0}
         b && $1 !~ /:$/ && $2 ~ /^(loaded|unavailable|rejected|disabled|shadowed)$/ {printf "  backend %-10s %s\n", $1, $2}
         b && /reason:/ {print "    " $0}
         /^Dispatch/ {d = 1} d && ($1 == "add" || $1 == "matmul") {print "  dispatch " $0}' "$work/info.txt"
}
status_of() { awk -v n="$1" '/^Backends:/ {b = 1} /^Dispatch/ {b = 0} b && $1 == n && $2 ~ /^(loaded|unavailable|rejected|disabled|shadowed)$/ {print $2; exit}' "$work/info.txt"; }
chain_of() { awk -v op="$1" '/^Dispatch/ {d = 1} d && $1 == op {$1 = ""; sub(/^ /, ""); print; exit}' "$work/info.txt"; }
expect_chain() {
    local got; got=$(chain_of "$1")
    case "$got" in $2) echo "  ok: $1 runs on: $got" ;; *) fail "$1 chain is '$got', want '$2'" ;; esac
}
expect_status() {
    local got; got=$(status_of "$1")
    [ "$got" = "$2" ] && echo "  ok: $1 is ${2:-absent}" || fail "$1 is '${got:-absent}', want '${2:-absent}'"
}

step "chroot: apt-get update; step 0: librayo0 alone (it depends on rayo-backend-scalar, rayo-common)"
inroot "apt-get update -qq >/dev/null"
apt_install "$(deb librayo0) $(deb rayo-backend-scalar) /tmp/debs/rayo-common_*_all.deb"
inroot 'set -e
    grep -q "XDG_CONFIG_HOME/rayo/conf.d" /etc/rayo/rayo.conf
    test -d /etc/rayo/conf.d && test -d /usr/share/rayo/conf.d
    test -f /usr/share/man/man5/rayo.conf.5.gz
    grep -q "^License: Expat" /usr/share/doc/librayo0/copyright
    zcat /usr/share/doc/librayo0/changelog.Debian.gz | grep -q avx512' ||
    fail "librayo0 alone lacks its configuration, rayo.conf(5), the MIT copyright or avx512 in its changelog"
echo "  ok: /etc/rayo/rayo.conf (layers include \$XDG_CONFIG_HOME/rayo/conf.d), /etc/rayo/conf.d,"
echo "      rayo.conf(5), copyright (Expat), changelog naming avx512"

step "step 1: + rayo-tools"
apt_install "$(deb rayo-tools)"
inroot "dpkg-query -W -f='\${db:Status-Abbrev} \${Package} \${Version}\n' 'librayo0' 'rayo-*' | sed -n 's/^ii */  /p'"
inroot "rayo-info --version; rayo-conform --version" | sed 's/^/  /'
info
expect_status scalar loaded
[ "$(grep -cE '^  [a-z0-9_]+ +(loaded|unavailable|rejected|disabled|shadowed) ' "$work/info.txt")" = 1 ] ||
    fail "more than one backend with only the base packages"
expect_chain add "scalar"

step "step 2: + rayo-backend-avx2"
apt_install "$(deb rayo-backend-avx2)"
info
if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
    expect_status avx2 loaded
    expect_chain add "avx2 > scalar"
else
    expect_status avx2 rejected
    echo "  (this CPU lacks AVX2+FMA: the package is installed and harmlessly refused)"
fi
grep -q "share/rayo/conf.d/50-avx2.conf *read" "$work/info.txt" || fail "the package's drop-in was not read"
inroot 'grep -q "it in \$datadir/rayo/conf.d" /usr/share/rayo/conf.d/50-avx2.conf' ||
    fail "50-avx2.conf does not name the folder it is installed in"
echo "  ok: 50-avx2.conf says it lives in \$datadir/rayo/conf.d"

step "step 3: + rayo-backend-vulkan and mesa-vulkan-drivers (lavapipe)"
apt_install "$(deb rayo-backend-vulkan) mesa-vulkan-drivers"
info
expect_status vulkan loaded
grep -q "llvmpipe.*(software)" "$work/info.txt" || fail "vulkan's device is not lavapipe (software)"
expect_chain add "*scalar > vulkan"

step "step 4: a third-party plugin from the installed template (pkg-config only)"
apt_install "$(deb librayo-dev) gcc make pkgconf libc6-dev"
mkdir -p "$root/tmp/debian-tests" && cp "$top"/packaging/debian/tests/* "$root/tmp/debian-tests/"
inroot "sh /tmp/debian-tests/build-against" | sed 's/^/  autopkgtest build-against: /' ||
    fail "the autopkgtest build-against failed"
inroot 'set -e
    echo "  pkg-config: abi_major=$(pkg-config --variable=abi_major rayo)" \
         "plugindir=$(pkg-config --variable=plugindir rayo)" \
         "localplugindir=$(pkg-config --variable=localplugindir rayo)"
    echo "              vendorconfdir=$(pkg-config --variable=vendorconfdir rayo) confdir=$(pkg-config --variable=confdir rayo)"
    cp -r /usr/share/doc/librayo-dev/plugin-template /tmp/my-plugin && cd /tmp/my-plugin
    make -s
    make -s check | tail -1
    make -s install plugindir=$(pkg-config --variable=localplugindir rayo)
    ls -l /usr/local/lib/rayo/abi1/' || fail "the template did not build, conform or install"
info
expect_status template loaded
grep -q "file: /usr/local/lib/rayo/abi1/rayo-template.so" "$work/info.txt" || fail "template not from the local dir"
expect_chain add "*scalar > template > vulkan"
echo "  a setuid-root copy of rayo-info run by nobody does not search the local dir:"
inroot 'cp /usr/bin/rayo-info /tmp/rayo-info-suid && chmod 4755 /tmp/rayo-info-suid &&
    setpriv --reuid=65534 --regid=65534 --clear-groups /tmp/rayo-info-suid' >"$work/suid.txt" 2>&1 ||
    { cat "$work/suid.txt"; fail "setuid rayo-info failed"; }
grep "^Plugin search path" "$work/suid.txt" | sed 's/^/    /'
grep -q "template" "$work/suid.txt" && fail "a setuid program loaded a plugin from the local dir"
echo "  ok: no template, no /usr/local in its search path"
echo "  the plugin's package ships a drop-in claiming first place (vendor dir):"
inroot 'printf "[dispatch]\norder = template\n" >/usr/share/rayo/conf.d/60-template.conf'
info
expect_chain add "template > *"

step "step 5: the administrator's /etc/rayo wins over the packages' drop-ins"
inroot 'printf "\n[dispatch]\norder = scalar\n" >>/etc/rayo/rayo.conf
    printf "# the administrator turns the package default off\n[backend.vulkan]\nenabled = no\n" >/etc/rayo/conf.d/50-vulkan.conf'
info
expect_chain add "scalar > *"
grep -q "share/rayo/conf.d/50-vulkan.conf *masked by /etc/rayo/conf.d/50-vulkan.conf" "$work/info.txt" ||
    fail "the admin's 50-vulkan.conf does not mask the package's"
expect_status vulkan disabled
explain=$(inroot 'rayo-info --explain add 1000' | grep '^order from')
echo "  rayo-info --explain add 1000: $explain"
case "$explain" in *"set by /etc/rayo/rayo.conf:"*) echo "  ok: it names the administrator's file and line" ;;
    *) fail "--explain does not name /etc/rayo/rayo.conf:LINE" ;; esac

echo "  a user's drop-in in \$XDG_CONFIG_HOME/rayo/conf.d:"
inroot 'mkdir -p /root/.config/rayo/conf.d && printf "[dispatch]\norder = template\n" >/root/.config/rayo/conf.d/90-user.conf'
info
grep -q "^  /root/.config/rayo/conf.d/90-user.conf *read" "$work/info.txt" || fail "the user's conf.d was not read"
expect_chain add "template > *"
inroot 'rm -r /root/.config/rayo'

step "step 6: remove and purge rayo-backend-vulkan"
inroot "dpkg -L rayo-backend-vulkan" | grep -E '/rayo|\.so' >"$work/owned.txt" || true
sed 's/^/  owned: /' "$work/owned.txt"
inroot "apt-get purge -y -qq rayo-backend-vulkan >/dev/null"
inroot "dpkg -s rayo-backend-vulkan >/dev/null 2>&1" && fail "rayo-backend-vulkan still known to dpkg after purge"
while read -r f; do inroot "test ! -f '$f'" </dev/null || fail "$f left after purge"; done <"$work/owned.txt"
left=$(inroot "find /usr /etc -name '*vulkan*' -path '*rayo*'")
[ "$left" = /etc/rayo/conf.d/50-vulkan.conf ] || fail "left after purge: ${left:-nothing}, want only the admin's own file"
echo "  ok: purged; of rayo's vulkan only the administrator's own /etc/rayo/conf.d/50-vulkan.conf is left"
echo "  (the plugin's per-user pipeline cache, ~/.cache/rayo/vulkan, is the user's, as with any program)"
info
expect_status vulkan ""
inroot "RAYO_CONFORM_OPS=add,softmax,matmul,sum sh /tmp/debian-tests/conform" >"$work/conform.txt" 2>&1 ||
    { cat "$work/conform.txt"; fail "the autopkgtest conform failed after the purge"; }
echo "  $(tail -1 "$work/conform.txt")"

step "the RPMs (rpmbuild, same split)"
wait "$rpm_pid" || { cat "$work/rpms.log"; rpm_pid=; fail "the RPM build failed"; }
rpm_pid=
cat "$work/rpms.log"

echo
echo "install-test: PASS in $(elapsed) s"
