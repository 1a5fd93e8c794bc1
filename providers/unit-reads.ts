import { newMarker } from "../core/batch-script";
import { parseUnitReadOutput, renderUnitReadScript, UnitReadRequest, UnitReadResult } from "../core/unit/unit-read";
import { Coalescer } from "../remote/coalesce";
import type { RemoteHost } from "../remote/remote-host";
import { boxKey } from "./run-reads";
import { unitPaths } from "./unit-view";

/**
 * The unit reads of the services on one box that arrive together (a refresh
 * reads every resource in parallel) go out as one command: one `pct exec`
 * and one `systemctl show` per box, not several per service. Reads with other
 * credentials or another box are never merged. Held by the run
 * (providers/provider-run.ts).
 */
export class UnitReads {
    private readonly batches = new Coalescer<{ remote: RemoteHost; unit: UnitReadRequest }, UnitReadResult>(5, async (_key, reqs) => {
        const units = reqs.map((r) => r.unit);
        const marker = newMarker();
        const result = await reqs[0]!.remote.runChecked(["sh", "-c", renderUnitReadScript(units, marker)]);
        return parseUnitReadOutput(result.stdout, units, marker);
    });

    /** `expectedEnvironmentHash`: environmentFileHash of the declared file; the box answers it again or "differs" (core/unit/unit-read.ts). */
    read(remote: RemoteHost, unitName: string, expectedEnvironmentHash: string): Promise<UnitReadResult> {
        const paths = unitPaths(unitName);
        return this.batches.request(boxKey(remote), {
            remote,
            unit: { unitName, unitPath: paths.unit, environmentFilePath: paths.environmentFile, expectedEnvironmentHash },
        });
    }
}
