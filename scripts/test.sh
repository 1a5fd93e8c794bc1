#!/usr/bin/env bash
# The test command (`npm test`): type-check, lint (eslint, prettier --check:
# zero findings), then every suite with mocha: pure logic, remote I/O against
# a real sshd, the providers at the fake-box seam, the components under mocks,
# the lab (real LXC, systemd, SGLang's own ServerArgs; the differential test),
# and the end-to-end deploys with the real engine against the lab.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh
npx tsc --noEmit -p tsconfig.json
npx eslint .
npx prettier --check . >/dev/null || { npx prettier --check .; exit 1; }
# Suites in order: fast pure ones first, the real engine against the lab last.
if [ $# -eq 0 ]; then
  set -- "tests/core/**/*.test.ts" "tests/remote/**/*.test.ts" "tests/providers/**/*.test.ts" "tests/components/**/*.test.ts" "tests/bench/**/*.test.ts" "tests/lab/**/*.test.ts" "tests/e2e/**/*.test.ts"
fi
npx mocha "$@"
