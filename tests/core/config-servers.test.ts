import assert from "node:assert/strict";
import { validateStackConfig } from "../../core/config/config";
import { ConfigIssue, formatConfigIssues } from "../../core/config/issues";
import type { StackConfig } from "../../core/config/schema";
import { renderUnit, serviceFromUnit } from "../../core/unit/systemd-unit";
import { fieldConfig, FieldRaw } from "./fixtures";

/** The field config as two one-GPU servers on one box with bigger GPUs (the 52 GB model fits one), each entry edited by `edit`. */
function twoServers(edit: (servers: Array<Record<string, unknown>>, raw: FieldRaw) => void = () => {}): Record<string, unknown> {
    const raw = fieldConfig();
    raw.host.gpus = { count: 2, name: "NVIDIA H200", memoryMiB: 143771 };
    const one = (name: string, port: number, gpus: number[]) => ({ ...structuredClone(raw.service), name, port, tensorParallelSize: 1, gpus });
    const servers = [one("qwen-a", 30000, [0]), one("qwen-b", 30001, [1])];
    edit(servers, raw);
    const { service: _service, ...sections } = raw;
    return { ...sections, servers };
}

function accepted(raw: unknown): StackConfig {
    const result = validateStackConfig(raw);
    assert.ok(result.ok, result.ok ? "" : formatConfigIssues(result.issues));
    return result.config;
}

function issueAt(raw: unknown, path: string): ConfigIssue {
    const result = validateStackConfig(raw);
    assert.equal(result.ok, false, "expected the config to be rejected");
    const issues = result.ok ? [] : result.issues;
    const found = issues.find((i) => i.path === path);
    assert.ok(found, `no issue at ${path}; got: ${issues.map((i) => `${i.path}: ${i.message}`).join("\n")}`);
    return found;
}

describe("stack config: several servers on one box (servers)", () => {
    it("takes two one-GPU servers, in declared order, each with its GPUs", () => {
        const config = accepted(twoServers());
        assert.deepEqual(
            config.servers.map((s) => [s.name, s.port, s.gpus]),
            [
                ["qwen-a", 30000, [0]],
                ["qwen-b", 30001, [1]],
            ],
        );
    });

    it("reads a stack of one `service` as a list of that one server, the same server as in `servers`", () => {
        const raw = fieldConfig();
        const single = accepted(raw);
        const { service, ...sections } = raw;
        const listed = accepted({ ...sections, servers: [service] });
        assert.equal(single.servers.length, 1);
        assert.deepEqual(listed, single);
        assert.equal(renderUnit(listed.servers[0]!, { hasSecrets: true }), renderUnit(single.servers[0]!, { hasSecrets: true }));
    });

    it("refuses service and servers both set, and neither, naming the fix", () => {
        const both = { ...twoServers(), service: fieldConfig().service };
        assert.match(issueAt(both, "servers").message, /sglang-serve:service and sglang-serve:servers are both set: keep one.*move service into servers/);
        const { service: _service, ...neither } = fieldConfig();
        assert.match(issueAt(neither, "service").message, /service is required: add it .*or servers/);
        assert.match(formatConfigIssues([issueAt(neither, "service")], "newbox"), /Start from an example: .* into Pulumi\.newbox\.yaml/s);
    });

    it("refuses a name, a port or a GPU that two servers share, under the second one", () => {
        const raw = twoServers((s) => {
            s[1]!.name = "qwen-a";
            s[1]!.port = 30000;
            s[1]!.gpus = [1, 0];
        });
        assert.match(
            issueAt(raw, "servers[1].name").message,
            /servers\[1\]\.name is "qwen-a", which servers\[0\] has too: each server needs its own name \(it names the unit sglang-qwen-a\.service/,
        );
        assert.match(
            issueAt(raw, "servers[1].port").message,
            /servers\[1\]\.port is 30000, which servers\[0\] has too: each server on box kpro5 needs its own port/,
        );
        assert.match(
            issueAt(raw, "servers[1].gpus[1]").message,
            /servers\[1\]\.gpus\[1\] is 0, which servers\[0\] has too: a GPU of box kpro5 serves one server/,
        );
        const result = validateStackConfig(raw);
        assert.ok(!result.ok && !result.issues.some((i) => i.path === "servers[1].gpus[0]"), "GPU 1 is servers[1]'s alone");
    });

    it("asks every server of several for its GPUs", () => {
        const raw = twoServers((s) => delete s[0]!.gpus);
        assert.match(
            issueAt(raw, "servers[0].gpus").message,
            /servers\[0\]\.gpus is not set, so the server would see every GPU of box kpro5, beside 1 other server\(s\) there: give each server the GPUs it uses/,
        );
    });

    it("refuses a GPU the box does not have, numbered as inside the container, and a GPU listed twice", () => {
        const raw = twoServers((s, r) => {
            r.container.gpus = [0, 1];
            s[1]!.gpus = [2, 2];
        });
        assert.match(
            issueAt(raw, "servers[1].gpus[0]").message,
            /servers\[1\]\.gpus\[0\] is GPU 2 but container\.gpus passes 2 GPU\(s\) to the container \(numbered 0\.\.1 inside\): use one of 0\.\.1/,
        );
        const result = validateStackConfig(raw);
        assert.ok(!result.ok && result.issues.some((i) => i.path === "servers[1].gpus[1]" && /lists GPU 2 twice: remove the duplicate/.test(i.message)));
    });

    it("holds each server's parallel layout and memory to its own GPUs", () => {
        const tp = twoServers((s) => (s[0]!.tensorParallelSize = 2));
        assert.match(
            issueAt(tp, "servers[0].tensorParallelSize").message,
            /servers\[0\]\.tensorParallelSize is 2 but servers\[0\]\.gpus gives the server 1 GPU\(s\): lower tensorParallelSize or list more GPUs in servers\[0\]\.gpus/,
        );
        const memory = twoServers((s, r) => {
            r.host.gpus = { count: 2, name: "NVIDIA RTX A6000", memoryMiB: 49140 };
            s[1]!.gpus = [1];
        });
        const message = issueAt(memory, "servers[1].tensorParallelSize").message;
        assert.match(message, /servers\[1\]\.model\.weightsGB 52 GB over tensorParallelSize 1 does not fit/);
        assert.match(
            message,
            /use a smaller or quantized model, or GPUs with more memory/,
            "one GPU is all servers[1] has: no larger tensorParallelSize to suggest",
        );
    });

    it("files every rule about one server under that server's key, in paths and messages", () => {
        const raw = twoServers((s) => {
            (s[1]!.environment as Record<string, string>).HF_TOKEN = "hf_x";
            s[1]!.listenHost = "127.0.0.1";
        });
        const secret = issueAt(raw, "servers[1].environment.HF_TOKEN").message;
        assert.match(secret, /move the name to sglang-serve:servers\[1\]\.secretEnvironment/);
        assert.doesNotMatch(secret, /\bservice\./);
        assert.match(issueAt(raw, "servers[1].listenHost").message, /^servers\[1\]\.listenHost is 127\.0\.0\.1/);
        const result = validateStackConfig(raw);
        assert.ok(!result.ok && !result.issues.some((i) => i.path.startsWith("servers[0]")), "servers[0] is valid");
    });

    it("refuses CUDA_VISIBLE_DEVICES or CUDA_DEVICE_ORDER in the environment of a server with gpus, which sets them", () => {
        const raw = twoServers((s) => ((s[0]!.environment as Record<string, string>).CUDA_VISIBLE_DEVICES = "1"));
        assert.match(
            issueAt(raw, "servers[0].environment.CUDA_VISIBLE_DEVICES").message,
            /is set beside servers\[0\]\.gpus, which sets CUDA_DEVICE_ORDER and CUDA_VISIBLE_DEVICES itself \(CUDA_VISIBLE_DEVICES=0, in nvidia-smi's order\): remove it/,
        );
        // Without gpus the variable is the operator's own, as before.
        const single = fieldConfig();
        (single.service.environment as Record<string, string>).CUDA_VISIBLE_DEVICES = "0,1";
        accepted(single);
    });
});

describe("a server's unit sees only its GPUs", () => {
    it("sets CUDA_VISIBLE_DEVICES to the server's GPUs in nvidia-smi's (PCI) order; a server without gpus gets neither variable", () => {
        const [a, b] = accepted(twoServers((s) => (s[1]!.gpus = [1]))).servers;
        const env = (s: typeof a) => serviceFromUnit(renderUnit(s!, { hasSecrets: true })).environment;
        assert.deepEqual(env(a), { SGLANG_ENABLE_SPEC_V2: "1", CUDA_DEVICE_ORDER: "PCI_BUS_ID", CUDA_VISIBLE_DEVICES: "0" });
        assert.deepEqual(env(b), { SGLANG_ENABLE_SPEC_V2: "1", CUDA_DEVICE_ORDER: "PCI_BUS_ID", CUDA_VISIBLE_DEVICES: "1" });
        const [single] = accepted(fieldConfig()).servers;
        assert.deepEqual(env(single), { SGLANG_ENABLE_SPEC_V2: "1" });
    });
});

/** Two boxes (kpro5 as in the field, and kpro6 like it at 10.1.2.6 with container 130), one server each, and `edit` applied. */
type RawBox = { host: FieldRaw["host"]; container: FieldRaw["container"] };
function twoBoxes(edit: (boxes: RawBox[], servers: Array<Record<string, unknown>>) => void = () => {}): Record<string, unknown> {
    const raw = fieldConfig();
    const kpro6 = { host: { ...structuredClone(raw.host), name: "kpro6", address: "10.1.2.6" }, container: { ...structuredClone(raw.container), vmid: 130 } };
    const boxes: RawBox[] = [{ host: raw.host, container: raw.container }, kpro6];
    const servers: Array<Record<string, unknown>> = [
        { ...structuredClone(raw.service), name: "qwen-a", box: "kpro5" },
        { ...structuredClone(raw.service), name: "qwen-b", box: "kpro6" },
    ];
    edit(boxes, servers);
    return { boxes, servers, readiness: raw.readiness };
}

describe("stack config: several boxes (boxes)", () => {
    it("takes two boxes, each server on the box it names, with the same port and GPUs on each", () => {
        const config = accepted(twoBoxes());
        assert.deepEqual(
            config.boxes.map((b) => [b.host.name, b.container?.vmid]),
            [
                ["kpro5", 129],
                ["kpro6", 130],
            ],
        );
        assert.deepEqual(
            config.servers.map((s) => [s.name, s.box, s.port]),
            [
                ["qwen-a", "kpro5", 30000],
                ["qwen-b", "kpro6", 30000],
            ],
        );
    });

    it("reads host and container as the one box, which every server is on; the same box written in boxes is the same config", () => {
        const raw = fieldConfig();
        const single = accepted(raw);
        assert.deepEqual(single.boxes, [{ host: single.boxes[0]!.host, container: single.boxes[0]!.container }]);
        assert.equal(single.servers[0]!.box, "kpro5");
        const { host, container, ...rest } = raw;
        assert.deepEqual(accepted({ ...rest, boxes: [{ host, container }] }), single);
    });

    it("refuses host and boxes both set, and neither, naming the fix", () => {
        const both = { ...twoBoxes(), host: fieldConfig().host };
        assert.match(issueAt(both, "boxes").message, /sglang-serve:host and sglang-serve:boxes are both set: keep one/);
        const { host: _host, ...neither } = fieldConfig();
        assert.match(issueAt(neither, "host").message, /host is required: add it .*or boxes/);
    });

    it("refuses a server whose box is not set or names no box, listing the boxes", () => {
        const raw = twoBoxes((_, s) => {
            delete s[0]!.box;
            s[1]!.box = "kpro7";
        });
        assert.match(issueAt(raw, "servers[0].box").message, /servers\[0\]\.box is not set, and the stack has 2 boxes: set it to one of kpro5, kpro6/);
        assert.match(issueAt(raw, "servers[1].box").message, /servers\[1\]\.box is "kpro7", which names no box of the stack: use one of kpro5, kpro6/);
    });

    it("refuses two boxes with one name or one container VMID", () => {
        const raw = twoBoxes((b) => {
            b[1]!.host.name = "kpro5";
            b[1]!.container.vmid = 129;
        });
        assert.match(issueAt(raw, "boxes[1].host.name").message, /boxes\[1\]\.host\.name is "kpro5", which boxes\[0\] has too: each box needs its own name/);
        assert.match(issueAt(raw, "boxes[1].container.vmid").message, /boxes\[1\]\.container\.vmid is 129, which boxes\[0\] has too/);
    });

    it("files each box's rules under its key, and each server's box rules under its box's", () => {
        const raw = twoBoxes((b) => {
            b[1]!.host.topology = "direct";
            b[1]!.host.gpus.memoryMiB = 24564;
        });
        assert.match(
            issueAt(raw, "boxes[1].container").message,
            /container must be absent when boxes\[1\]\.host\.topology is direct .*: remove sglang-serve:boxes\[1\]\.container, or set boxes\[1\]\.host\.topology: pct-exec/,
        );
        const memory = issueAt(raw, "servers[1].tensorParallelSize").message;
        assert.match(memory, /one 24\.0 GiB GPU \(boxes\[1\]\.host\.gpus\.memoryMiB 24564\)/);
        const result = validateStackConfig(raw);
        assert.ok(!result.ok && !result.issues.some((i) => i.path.startsWith("servers[0]") || i.path.startsWith("boxes[0]")), "kpro5 and its server are valid");
    });
});
