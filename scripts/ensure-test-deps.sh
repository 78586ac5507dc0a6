#!/usr/bin/env bash
# Installs the system programs the test suite needs, from Debian's packages,
# when they are missing. Idempotent: does nothing when everything is present.
#
# Each entry is "<absolute path of the command>|<Debian package that provides it>".
# Add new needs to this list.
set -euo pipefail

NEEDS=(
  "/usr/bin/chromium|chromium"
  "/usr/bin/exif|exif"
  "/usr/bin/ffmpeg|ffmpeg"
  "/usr/bin/ffprobe|ffmpeg"
  "/usr/bin/heif-convert|libheif-examples"
  # Document conversion (yifangyun_preview) with LibreOffice headless; a file each nogui package provides.
  "/usr/bin/soffice|libreoffice-core-nogui"
  "/usr/lib/libreoffice/program/libswlo.so|libreoffice-writer-nogui"
  "/usr/lib/libreoffice/program/libsclo.so|libreoffice-calc-nogui"
  "/usr/lib/libreoffice/program/libPresentationMinimizerlo.so|libreoffice-impress-nogui"
  "/usr/bin/pdfinfo|poppler-utils"
  "/usr/bin/unzip|unzip"
  "/usr/bin/zip|zip"
  # The console screenshots in Chinese (test/e2e/console-polish.test.ts): a CJK font for Chromium.
  "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc|fonts-noto-cjk"
  # A pseudo-terminal for the start banner test (test/e2e/start-banner.test.ts); util-linux, essential in Debian.
  "/usr/bin/script|bsdutils"
  # A throw-away Ceph cluster with radosgw: the S3 server of the S3 BlobStore tests (test/helpers/s3-server.ts).
  "/usr/bin/ceph-mon|ceph-mon"
  "/usr/bin/ceph-osd|ceph-osd"
  "/usr/bin/radosgw|radosgw"
  "/usr/bin/radosgw-admin|ceph-common"
  "/usr/bin/ceph|ceph-common"
  "/usr/bin/ceph-authtool|ceph-common"
  "/usr/bin/monmaptool|ceph-base"
  # A throw-away PostgreSQL cluster: the cluster-mode MetaStore tests (test/helpers/pg-server.ts).
  "/usr/lib/postgresql/15/bin/initdb|postgresql-15"
  "/usr/lib/postgresql/15/bin/pg_ctl|postgresql-15"
  # Clients of the S3 listener (test/e2e/s3-tools.test.ts). boto3 is a Python module: checked by importing it.
  "/usr/bin/s3cmd|s3cmd"
  "/usr/bin/rclone|rclone"
  "python3:boto3|python3-boto3"
  # Python's requests: browser-form POST uploads as s3-tests send them (test/e2e/s3-post-requests.test.ts).
  "python3:requests|python3-requests"
)

# Whether an entry's need is met: an executable path, or "python3:<module>" importable by python3.
present() {
  case "$1" in
    python3:*) command -v python3 >/dev/null 2>&1 && python3 -c "import ${1#python3:}" >/dev/null 2>&1 ;;
    # Programs (in a bin directory) must be executable; data files and libraries need only be there.
    */bin/*) [ -x "$1" ] ;;
    *) [ -f "$1" ] ;;
  esac
}

missing_pkgs=()
for entry in "${NEEDS[@]}"; do
  cmd="${entry%%|*}"
  pkg="${entry#*|}"
  if ! present "$cmd"; then
    missing_pkgs+=("$pkg")
  fi
done

if [ "${#missing_pkgs[@]}" -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  echo "ensure-test-deps: missing Debian package(s): ${missing_pkgs[*]}" >&2
  echo "ensure-test-deps: not root and sudo is not available; install them with:" >&2
  echo "  apt-get update && apt-get install -y --no-install-recommends ${missing_pkgs[*]}" >&2
  exit 1
fi

echo "ensure-test-deps: installing ${missing_pkgs[*]} ..." >&2
"${SUDO[@]}" apt-get update
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y --no-install-recommends "${missing_pkgs[@]}"

for entry in "${NEEDS[@]}"; do
  cmd="${entry%%|*}"
  if ! present "$cmd"; then
    echo "ensure-test-deps: $cmd still missing after installing ${entry#*|}" >&2
    exit 1
  fi
done
