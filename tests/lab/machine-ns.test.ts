import assert from "node:assert/strict";
import { ChildProcess, spawn } from "child_process";
import * as fs from "fs";
import { mountNs, pidsInNamespace, pinMountNamespaces, waitGone } from "../../lab/machine-ns";
import { waitFor } from "./lab-fixture";

// A lab's down kills what is left in its mount namespaces after its processes are gone. Labs go up and down side by
// side, and a freed namespace's inode number goes to the next namespace made: the pin is what keeps another lab out.
describe("lab machine namespaces", function () {
    this.timeout(30_000);
    const started: ChildProcess[] = [];

    const inNewMountNs = async (): Promise<{ pid: number; ns: string }> => {
        const child = spawn("unshare", ["--mount", "--propagation", "private", "sleep", "60"], { stdio: "ignore" });
        started.push(child);
        const pid = child.pid!;
        const outer = mountNs(process.pid);
        const own = async () => {
            const ns = mountNs(pid);
            return ns && ns !== outer ? ns : undefined;
        };
        return { pid, ns: await waitFor(`unshare (pid ${pid}) in a mount namespace of its own`, own, 2000, 10) };
    };

    after(() => {
        for (const c of started) c.kill("SIGKILL");
    });

    it("keeps a pinned namespace's name from every namespace made after its last process died", async () => {
        const first = await inNewMountNs();
        const pinned = pinMountNamespaces([first.pid, process.pid], mountNs(process.pid));
        try {
            assert.deepEqual([...pinned.keys()], [first.ns], "the process's namespace, once; the caller's own is left out");
            process.kill(first.pid, "SIGKILL");
            assert.deepEqual(await waitGone([first.pid], 5000), []);
            const later = await Promise.all(Array.from({ length: 8 }, inNewMountNs));
            assert.ok(!later.some((l) => l.ns === first.ns), `a later namespace took ${first.ns}: ${later.map((l) => l.ns).join(", ")}`);
            assert.deepEqual(pidsInNamespace(first.ns), [], "nothing runs in the pinned namespace");
        } finally {
            for (const fd of pinned.values()) fs.closeSync(fd);
        }
    });
});
