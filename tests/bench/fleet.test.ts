import assert from "node:assert/strict";
import * as pulumi from "@pulumi/pulumi";
import { validateStackConfig } from "../../core/config/config";
import { formatConfigIssues } from "../../core/config/issues";
import { fleetMemberPlan, fleetProgramConfig, fleetStackConfig } from "../../bench/lib/fleet";
import { FLEET_GPU, FLEET_MAX_SERVERS, planFleet, stackOf } from "../../bench/lib/fleet-plan";
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
    const result = validateStackConfig(Object.fromEntries(Object.entries(config).map(([k, v]) => [k.replace(/^sglang-serve:/, ""), v])));
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
            (e: Error) =>
                /need 57 servers/.test(e.message) &&
                /--fleet 1,4,16,32/.test(e.message) &&
                new RegExp(`has ${FLEET_MAX_SERVERS} GPUs, one per server`).test(e.message),
        );
    });

    it("refuses a fleet size listed twice, which would give two programs the same stack", () => {
        assert.throws(() => planFleet([4, 4], 0), /--fleet lists a size twice: 4,4/);
    });

    it("plans servers that validate as stacks, each on a GPU of its own, and programs that validate as one stack", () => {
        const plan = planFleet([1, 4, 16], 11);
        assert.equal(plan.all.length, FLEET_MAX_SERVERS);
        for (const member of plan.all) {
            const {
                servers: [service],
                boxes: [box],
            } = validated(fleetStackConfig(MACHINES, member, plan));
            assert.equal(service!.name, member.name);
            assert.equal(service!.port, member.port);
            assert.deepEqual(service!.gpus, [member.gpu]);
            assert.equal(box!.host.gpus.memoryMiB, FLEET_GPU.memoryMiB);
            assert.equal(box!.host.gpus.count, FLEET_MAX_SERVERS);
        }
        assert.deepEqual(new Set(plan.all.map((m) => m.gpu)).size, plan.all.length, "no GPU given twice");
        // The stack's own rules (disjoint GPUs, unique ports on the box) take each program as it is.
        for (const members of plan.programs.values()) {
            const { servers } = validated(fleetProgramConfig(MACHINES, members, plan));
            assert.deepEqual(
                servers.map((s) => [s.name, s.port, s.gpus]),
                members.map((m) => [m.name, m.port, [m.gpu]]),
            );
        }
    });
});

describe("bench fleet program under mocks", () => {
    it("is the stack program: one host and container, and per member the service and readiness check", async () => {
        const plan = planFleet([1, 4], 0);
        const members = plan.programs.get(4)!;
        const mocks = new RecordingMocks();
        await pulumi.runtime.setMocks(mocks, "sglang-serve", "fleet4", false);
        const config = fleetProgramConfig(MACHINES, members, plan);
        // No secret in the config: the servers require the key, whose value only the deploy run gives.
        pulumi.runtime.setAllConfig(Object.fromEntries(Object.entries(config).map(([k, v]) => [k, JSON.stringify(v)])), []);
        const programPath = require.resolve("../../index");
        delete require.cache[programPath];
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const program = require(programPath) as { servers: Record<string, { endpoint: pulumi.Output<string>; liveServerArgs: pulumi.Output<unknown> }> };
        // The readiness checks' outputs: every resource is registered once they resolve.
        const servers = await Promise.all(
            Object.entries(program.servers).map(async ([name, s]) => [name, await promiseOf(s.endpoint), await promiseOf(s.liveServerArgs)] as const),
        );
        assert.deepEqual(
            servers.map(([name, endpoint]) => [name, endpoint]),
            members.map((m) => [m.name, `http://127.0.121.29:${m.port}`]),
        );
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
        // The units the bench places before `up` (preplaceFleet) are these, byte for byte: `up` adopts them untouched.
        assert.deepEqual(
            units.map((u) => u.inputs.unitText),
            members.map((m) => fleetMemberPlan(MACHINES, m, plan).service.unitText),
        );
        assert.deepEqual(
            members.map((m) => stackOf(m, plan)),
            members.map(() => "fleet4"),
        );
    });
});
