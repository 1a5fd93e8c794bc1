// Root hooks (mocha runs them around each file's tests in parallel mode, once
// around all tests in serial mode): the lab a test file brings up through
// tests/lab/lab-fixture.ts takes that file's own addresses and is stopped
// with that file. A failed assert.match on an engine's output shows all of
// it, not its first 10,000 characters (util.inspect's default): the preview's
// diff comes first, and what the rollout said and the error at the end, which
// CI's log tail then shows.
// With SGLANG_SERVE_ENGINE_RUN_LOG set (counting engine runs, docs/testing.md
// "Engine runs"), each command scripts/pulumi.sh logs names the test file.
import * as path from "node:path";
import { inspect } from "node:util";
import { stopTestLab, useTestFiles } from "./lab/lab-fixture";

inspect.defaultOptions.maxStringLength = Infinity;

export const mochaHooks = {
    beforeAll(this: Mocha.Context): void {
        const files = (this.test?.parent?.suites ?? []).flatMap((suite) => (suite.file ? [suite.file] : []));
        useTestFiles(files);
        const file = files[0];
        if (process.env.SGLANG_SERVE_ENGINE_RUN_LOG && file) process.env.SGLANG_SERVE_ENGINE_RUN_TAG = path.relative(process.cwd(), file);
    },
    async afterAll(this: Mocha.Context): Promise<void> {
        this.timeout(60_000);
        await stopTestLab();
    },
};
