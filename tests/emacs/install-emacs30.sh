#!/usr/bin/env bash
# Installs Debian's Emacs 30 (from bookworm-backports) into DIR, beside the
# system's Emacs, and prints the path of DIR/bin/emacs, a wrapper that runs it.
#
#   tests/emacs/install-emacs30.sh DIR
#
# Nothing outside DIR changes: apt runs with a private configuration (its own
# sources, lists and cache under DIR/apt, naming Debian 12 and its backports),
# the system's sources and dpkg database are left alone, and the packages are
# unpacked with `dpkg -x', not installed.  A second run with DIR in place only
# checks the wrapper and prints its path.
#
# An unpacked Emacs looks for its Lisp, data and helper directories where the
# package would have put them (/usr/share/emacs/VERSION/…), so the wrapper points
# EMACSLOADPATH, EMACSDATA, EMACSDOC and EMACSPATH into DIR.  Emacs reads the
# dump file beside its binary under the binary's name (emacs-nox.pdmp), so a
# link to the package's dump is put there.  A child Emacs that a test starts
# from `invocation-directory' runs that binary directly and inherits the
# variables, so it works the same way.  A shared library the binary needs and
# the system lacks (Debian 12 has no libtree-sitter0 unless something pulled it
# in) is unpacked from Debian's own archive into DIR as well.
set -euo pipefail

dir=${1:?usage: install-emacs30.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
wrapper=$dir/bin/emacs
root=$dir/root
suite=bookworm-backports
packages=(emacs-nox emacs-bin-common emacs-common emacs-el)

works() {
  [ -x "$wrapper" ] &&
    [ "$("$wrapper" -Q --batch --eval '(princ emacs-major-version)' 2>&1)" = 30 ]
}

if works; then
  echo "$wrapper"
  exit 0
fi

apt_dir=$dir/apt
rm -rf "$apt_dir" "$root" "$dir/bin"
mkdir -p "$apt_dir"/{sources,preferences,lists/partial,cache/archives/partial,debs} "$root"

# Which archive to use is said here and nowhere else.  Both suites are listed
# so that a library missing from the system comes from Debian proper; the
# Emacs packages are asked for by suite name.
cat >"$apt_dir/sources/emacs30.sources" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
apt_options=(
  -o "Dir::Etc::SourceList=/dev/null"
  -o "Dir::Etc::SourceParts=$apt_dir/sources"
  -o "Dir::Etc::Preferences=/dev/null"
  -o "Dir::Etc::PreferencesParts=$apt_dir/preferences"
  -o "Dir::State::Lists=$apt_dir/lists"
  -o "Dir::Cache=$apt_dir/cache"
)
# As root apt downloads as the _apt user, who may not reach DIR.
if [ "$(id -u)" = 0 ]; then
  apt_options+=(-o "APT::Sandbox::User=root")
fi

echo "Fetching Emacs 30 from $suite into $dir" >&2
apt-get "${apt_options[@]}" -qq update >&2
(cd "$apt_dir/debs" &&
  apt-get "${apt_options[@]}" -qq download "${packages[@]/%//$suite}" >&2)
for deb in "$apt_dir"/debs/*.deb; do
  dpkg -x "$deb" "$root"
done

version=$(cd "$root/usr/share/emacs" && ls -d 30.* | sort -V | tail -1)
arch_dir=$(ls -d "$root/usr/libexec/emacs/$version"/*/ | head -1)
arch_dir=${arch_dir%/}
binary=$root/usr/bin/emacs-nox
dump=$(cd "$arch_dir" && ls emacs-*.pdmp | head -1)
# The link is relative to usr/bin: ../libexec/emacs/VERSION/ARCH/emacs-….pdmp.
ln -sfn "../${arch_dir#"$root/usr/"}/$dump" "$root/usr/bin/emacs-nox.pdmp"

libs=$root/usr/lib/$(basename "$arch_dir")
missing=$(ldd "$binary" | awk '/not found/ {print $1}')
if [[ $missing == *libtree-sitter* ]]; then
  echo "Fetching libtree-sitter0 (the system has none)" >&2
  (cd "$apt_dir/debs" && apt-get "${apt_options[@]}" -qq download libtree-sitter0/bookworm >&2)
  dpkg -x "$apt_dir"/debs/libtree-sitter0_*.deb "$root"
fi
missing=$(LD_LIBRARY_PATH=$libs ldd "$binary" | awk '/not found/ {print $1}')
if [ -n "$missing" ]; then
  echo "Emacs $version needs libraries this system lacks: $missing" >&2
  exit 1
fi

mkdir -p "$dir/bin"
cat >"$wrapper.tmp" <<EOF
#!/bin/sh
# Emacs $version unpacked from Debian's $suite packages by install-emacs30.sh.
root='$root'
export EMACSLOADPATH="\$root/usr/share/emacs/$version/lisp"
export EMACSDATA="\$root/usr/share/emacs/$version/etc"
export EMACSDOC="\$root/usr/share/emacs/$version/etc"
export EMACSPATH="\$root/${arch_dir#"$root/"}"
export LD_LIBRARY_PATH="\$root/${libs#"$root/"}\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
exec "\$root/usr/bin/emacs-nox" "\$@"
EOF
chmod +x "$wrapper.tmp"
mv "$wrapper.tmp" "$wrapper"
rm -rf "$apt_dir"

if ! works; then
  echo "The unpacked Emacs does not start:" >&2
  "$wrapper" -Q --batch --eval '(princ emacs-version)' >&2 || true
  exit 1
fi
echo "$wrapper"
