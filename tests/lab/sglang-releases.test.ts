// The stack held to the real SGLang releases through the oracle
// (sglang-release/oracle.ts), one concern a module in tests/lab/releases/:
// the differential test of the stack's rules, the oracle itself, extraArgs
// through each release's argparse, the API key in SGLang's --config file, the
// context length the box facts derive, and declared against live server args.
//
// They are one test file so that they run in one mocha worker, one after
// another: a release's `oracle.py --serve` process (its SGLang import, about
// 3.5 CPU-s) is shared by every call made within its linger, so the four
// releases are imported about once each instead of once per module and
// release (20 imports as six files; 83 CPU-s instead of 118, 2026-12-06).
// Under a full run's load the calls to one release are minutes apart, past
// the processes' linger, so the file keeps them (keepOracles) until its end:
// a full run imported the releases 15 times in this file with the linger
// alone (2026-12-06).
// Each module still runs on its own: `npx mocha tests/lab/releases/argparse.ts`;
// `npm run differential` runs the differential module with 1,000 configs a
// release.
import { keepOracles } from "../../sglang-release/oracle";
import "./releases/differential";
import "./releases/oracle";
import "./releases/argparse";
import "./releases/config-file";
import "./releases/context-length";
import "./releases/live-args";

let endKeeping: (() => void) | undefined;
before(() => {
    endKeeping = keepOracles();
});
after(() => endKeeping?.());
