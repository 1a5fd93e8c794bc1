#!/usr/bin/env bash
# The test command (`npm test`): type-check, then every suite with mocha:
# pure logic, remote I/O against a real sshd, the lab, the components under
# mocks, and the end-to-end deploys with the real engine against the lab.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh
npx tsc --noEmit -p tsconfig.json
npx mocha "$@"
