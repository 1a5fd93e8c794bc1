/**
 * The differential test's generator against one release, as a report: how
 * many configs agree and, grouped, where the stack and that release differ.
 * For checking a release before the stack pins it:
 *
 *   node --require ./ts-hook.cjs tests/lab/sglang-differential-report.ts 0.5.23 [count]
 */
import { boxOf, runDifferential, startFailure } from "./sglang-differential";

async function main(): Promise<void> {
    const version = process.argv[2];
    if (!version) throw new Error("usage: sglang-differential-report.ts <sglang version> [count]");
    const count = Number(process.argv[3] ?? 1000);
    const r = await runDifferential(version, count, 20261201);
    console.log(
        `SGLang ${version}: ${r.compared} configs, ${r.agreed} agree (${r.acceptedBoth} accepted by both, ${r.rejectedBoth} rejected by both under SGLang's key, ` +
            `${r.rejectedBothExtraArgsFirst} of them after SGLang's ServerArgs refused extraArgs first, ${r.rejectedBothAtStart} at the start: GPUs or memory, ${r.rejectedBothFitFirst} where the rules refused the fit and SGLang's code another setting first), ` +
            `${r.disagreements.length} disagree`,
    );
    const groups = new Map<string, number>();
    for (const d of r.disagreements) {
        const stack = d.stack.accepted ? "the stack accepts" : `the stack rejects ${d.stack.keys.join(", ")}`;
        const start = startFailure(d.service, d.sglang);
        const sglang =
            d.sglang.status === "ok"
                ? start
                    ? `SGLang's code accepts, the start fails: ${start.message}`
                    : "SGLang starts"
                : `SGLang: ${d.sglang.exceptionType ?? d.sglang.status}: ${(d.sglang.message ?? "").slice(0, 110)}`;
        const key = `${stack} | ${sglang}`;
        groups.set(key, (groups.get(key) ?? 0) + 1);
    }
    for (const [key, n] of [...groups.entries()].sort((a, b) => b[1] - a[1])) console.log(`${String(n).padStart(5)}  ${key}`);
    if (process.env.SGLANG_SERVE_DIFFERENTIAL_SHOW) {
        for (const d of r.disagreements)
            console.log(JSON.stringify({ service: d.service, box: boxOf(d.service).name, stack: d.stack.keys, accepted: d.stack.accepted }));
    }
}

main().catch((e: Error) => {
    console.error(e.message);
    process.exit(1);
});
