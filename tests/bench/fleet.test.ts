import assert from "node:assert/strict";
import * as pulumi from "@pulumi/pulumi";
import { validateStackConfig } from "../../core/config";
import { formatConfigIssues } from "../../core/config-issues";
import { fleetProgramConfig, fleetStackConfig } from "../../bench/lib/fleet";
import { FLEET_GPU, FLEET_MAX_SERVERS, FLEET_MEM_FRACTION, planFleet } from "../../bench/lib/fleet-plan";
import type { LabMachines, StackConfigFile } from "../../lab/stack";
import { promiseOf, RecordingMocks, SERVICE_TYPE } from "../components/recording-mocks";

// The fleet phases of `npm run bench` without a lab: which servers each
// program and stack gets, and what the fleet program declares for them.

/** The fleet lab's machines as readLabInfo gives them (the addresses of scripts/bench.ts). */
const MACHINES: LabMachines = {
    host: {
        hostname: "kpro5",
        address: "127.0.121.5",
        sshPort: 22,
        hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFBMQUNFSE9MREVSLVJFUExBQ0UtV0lUSC1LRVlTQ0FO",
        knownHostsFile: "/tmp/lab/known_hosts",
        sshdLog: "/tmp/lab/sshd-host.log",
    },
    container: {
        hostname: "llm-two",
        address: "127.0.121.29",
        sshPort: 22,
        hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFBMQUNFSE9MREVSLVJFUExBQ0UtV0lUSC1LRVlTQ0FO",
        knownHostsFile: "/tmp/lab/known_hosts",
        sshdLog: "/tmp/lab/sshd-container.log",
        vmid: 129,
    },
    clientKeyPath: "/tmp/lab/client_ed25519",
    vmid: 129,
};

function validated(config: StackConfigFile) {
    const section = (k: string) => config[`sglang-serve:${k}`];
    const result = validateStackConfig({
        host: section("host"),
        container: section("container"),
        service: section("service"),
        readiness: section("readiness"),
    });
    if (!result.ok) throw new Error(formatConfigIssues(result.issues));
    return result.config;
}

describe("bench fleet plan", () => {
    it("gives each fleet program and each one-service stack servers of its own (one owner per unit)", () => {
        const plan = planFleet([1, 4, 16], 4);
        const owners = [...[...plan.programs.values()].map((members) => members.map((m) => m.name)), ...plan.stacks.map((m) => [m.name])];
        assert.deepEqual(
            owners.map((names) => names.length),
            [1, 4, 16, 1, 1, 1, 1],
        );
        const names = owners.flat();
        assert.equal(new Set(names).size, names.length, `a server is planned for two owners: ${names.join(" ")}`);
        const ports = plan.all.map((m) => m.port);
        assert.equal(new Set(ports).size, ports.length);
        assert.deepEqual(plan.all.map((m) => m.name).sort(), [...names].sort());
    });

    it("refuses sizes the fleet lab's GPUs cannot hold, naming the options", () => {
        assert.throws(
            () => planFleet([1, 4, 16, 32], 4),
            (e: Error) => /need 57 servers/.test(e.message) && /--fleet 1,4,16,32/.test(e.message) && new RegExp(`hold ${FLEET_MAX_SERVERS}`).test(e.message),
        );
    });

    it("refuses a fleet size listed twice, which would give two programs the same stack", () => {
        assert.throws(() => planFleet([4, 4], 0), /--fleet lists a size twice: 4,4/);
    });

    it("plans servers that validate as stacks and fit the fleet lab's GPUs together", () => {
        const plan = planFleet([1, 4, 16], 16);
        for (const member of plan.all) {
            const {
                servers: [service],
                boxes: [box],
            } = validated(fleetStackConfig(MACHINES, member));
            assert.equal(service!.name, member.name);
            assert.equal(service!.port, member.port);
            assert.equal(box!.host.gpus.memoryMiB, FLEET_GPU.memoryMiB);
        }
        assert.ok(FLEET_MAX_SERVERS * FLEET_MEM_FRACTION <= 1, `${FLEET_MAX_SERVERS} servers of ${FLEET_MEM_FRACTION} overfill the GPUs`);
        assert.ok(plan.all.length <= FLEET_MAX_SERVERS);
    });
});

describe("bench fleet program under mocks", () => {
    it("declares one host and container, and per member the service and readiness check the stack program declares", async () => {
        const members = planFleet([1, 4], 0).programs.get(4)!;
        const mocks = new RecordingMocks();
        await pulumi.runtime.setMocks(mocks, "sglang-serve", "fleet4", false);
        const config = fleetProgramConfig(MACHINES, members);
        // No secret in the config: the servers require the key, whose value only the deploy run gives.
        pulumi.runtime.setAllConfig(Object.fromEntries(Object.entries(config).map(([k, v]) => [k, JSON.stringify(v)])), []);
        const programPath = require.resolve("../../bench/fleet/index");
        delete require.cache[programPath];
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const program = require(programPath) as Record<"endpoints" | "liveServerArgs", Record<string, pulumi.Output<unknown>>>;
        const resolved = (outputs: Record<string, pulumi.Output<unknown>>) =>
            Promise.all(Object.entries(outputs).map(async ([k, v]) => [k, await promiseOf(v)])).then(Object.fromEntries);
        // The readiness checks' outputs: every resource is registered once they resolve.
        assert.deepEqual(Object.keys(await resolved(program.liveServerArgs)), ["n4-0", "n4-1", "n4-2", "n4-3"]);
        const endpoints = await resolved(program.endpoints);

        assert.deepEqual(endpoints, Object.fromEntries(members.map((m) => [m.name, `http://127.0.121.29:${m.port}`])));
        const named = (type: string) => mocks.resources.filter((r) => r.type === `sglang-serve:index:${type}`).map((r) => r.name);
        assert.deepEqual(named("GpuHost"), ["kpro5"]);
        assert.deepEqual(named("LxcContainer"), ["ct129"]);
        assert.deepEqual(named("SglangService"), ["n4-0", "n4-1", "n4-2", "n4-3"]);
        assert.deepEqual(named("ReadinessCheck"), ["n4-0-ready", "n4-1-ready", "n4-2-ready", "n4-3-ready"]);
        const units = mocks.resources.filter((r) => r.type === SERVICE_TYPE);
        assert.deepEqual(
            units.map((u) => [
                u.inputs.unitName,
                (u.inputs.flags as Record<string, string>)["--port"],
                (u.inputs.flags as Record<string, string>)["--config"],
                u.inputs.owner,
            ]),
            members.map((m) => [`sglang-${m.name}.service`, String(m.port), `/etc/sglang/${m.name}.yaml`, "sglang-serve/fleet4"]),
        );
    });
});
