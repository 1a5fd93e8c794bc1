// Root hooks (mocha runs `afterAll` after each file's tests in parallel mode,
// once after all tests in serial mode): the lab a test file brought up through
// tests/lab/lab-fixture.ts is stopped with that file.
import { stopTestLab } from "./lab/lab-fixture";

export const mochaHooks = {
    async afterAll(this: Mocha.Context): Promise<void> {
        this.timeout(60_000);
        await stopTestLab();
    },
};
