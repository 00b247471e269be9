#!/usr/bin/env bash
# Real-software corpus (see test-suite/corpus/README.md): builds Debian's upstream sources of real projects
# with clang-19 and through pathprof-clang in every mode, runs their own test suites, checks the profiles.
#   test-suite/corpus/run.sh                          all projects, all modes (about an hour on 2 cores)
#   test-suite/corpus/run.sh --quick                  the CI subset (3 projects, under 10 minutes)
#   test-suite/corpus/run.sh --project jsoncpp --mode context
# Builds pathprof into dist/ first when dist/ is missing (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$HOME/.cargo/bin:$PATH"
if [[ ! -x dist/bin/pathprof-clang || ! -x dist/bin/pathprof || ! -f dist/lib/libpathprof.so || ! -f dist/lib/libpathprof_rt.a ]]; then
  scripts/build.sh
fi
[[ -w /tmp && -k /tmp ]] || chmod 1777 /tmp 2>/dev/null || true   # apt-get source needs a usable /tmp
python3 test-suite/corpus/test_segments.py --quiet   # the count check's self-test (a few ms)
exec python3 test-suite/corpus/corpus.py "$@"
