// Root hooks (mocha runs `afterAll` after each file's tests in parallel mode,
// once after all tests in serial mode): the lab a test file brought up through
// tests/lab/lab-fixture.ts is stopped with that file. A failed assert.match
// on an engine's output shows all of it, not its first 10,000 characters
// (util.inspect's default): the preview's diff comes first, and what the
// rollout said and the error at the end, which CI's log tail then shows.
import { inspect } from "node:util";
import { stopTestLab } from "./lab/lab-fixture";

inspect.defaultOptions.maxStringLength = Infinity;

export const mochaHooks = {
    async afterAll(this: Mocha.Context): Promise<void> {
        this.timeout(60_000);
        await stopTestLab();
    },
};
