// mocha's spec reporter, with the ten slowest tests printed before its summary
// (what a test run's time goes to; timings are reported here, never asserted).
import * as Mocha from "mocha";

const { EVENT_TEST_PASS, EVENT_TEST_FAIL } = Mocha.Runner.constants;
const SHOWN = 10;

interface Timed {
    title: string;
    file: string;
    ms: number;
}

class SlowestReporter extends Mocha.reporters.Spec {
    private readonly timed: Timed[] = [];

    constructor(runner: Mocha.Runner, options?: Mocha.MochaOptions) {
        super(runner, options);
        const record = (test: Mocha.Test): void => {
            if (typeof test.duration === "number") this.timed.push({ title: test.fullTitle(), file: test.file ?? "", ms: test.duration });
        };
        runner.on(EVENT_TEST_PASS, record);
        runner.on(EVENT_TEST_FAIL, record);
    }

    override epilogue(): void {
        const slowest = [...this.timed].sort((a, b) => b.ms - a.ms).slice(0, SHOWN);
        if (slowest.length > 0) {
            console.log(`\n  The ${slowest.length} slowest tests:`);
            for (const t of slowest) console.log(`  ${(t.ms / 1000).toFixed(1).padStart(7)} s  ${t.title}  (${t.file.replace(`${process.cwd()}/`, "")})`);
        }
        super.epilogue();
    }
}

export = SlowestReporter;
