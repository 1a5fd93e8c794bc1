/**
 * The box's own facts about the server it runs, read before anything is
 * changed and on every refresh: the SGLang release installed for the
 * configured python (its package metadata, never `import sglang`, which loads
 * torch), and the model folder's config.json (architecture, MTP layers, layer
 * types) and weights size (the safetensors index). A declared value the box
 * contradicts fails the preview, naming both.
 */
import { staticPoolFit } from "./config-rules";
import { describePlacement, parallelLayout, WeightsPlacement, weightsPlacement } from "./gpu-fit";
import type { ServiceConfig } from "../config/schema";
import { extraFlagInteger, extraFlagValues, shownExtraFlag } from "../sglang/extra-args";
import { ALLOW_LONGER_CONTEXT_ENV, parseSglangBool } from "../sglang/rules";
import { judgeServerArgs, ServerArgsInput } from "../sglang/server-args";
import { sglangRelease } from "../sglang/releases";
import { releaseVenvDir, servicePython, STAGED_MARKER, STAGING_MARKER } from "../venv/venv-layout";

export interface BoxFacts {
    /** The installed distribution's version (importlib.metadata); null when sglang is not installed for that python. */
    sglangVersion: string | null;
    /**
     * `missing`: the configured python does not exist (the rest was read by
     * the box's python3); `staging`: it is a venv whose staging by the stack
     * did not finish (core/venv/venv-layout.ts STAGING_MARKER); `unstaged`: a venv
     * at the path the stack stages into that the stack did not stage (no
     * STAGED_MARKER), whose python was not run. Absent: it ran.
     */
    python?: "missing" | "staging" | "unstaged";
    model: "present" | "missing" | "no-config" | "unreadable-config";
    architecture?: string;
    layerTypes?: string[];
    /** `mtp_num_hidden_layers` (Qwen3.5/3.6) or `num_nextn_predict_layers` (DeepSeek family); 0 when neither is set. */
    mtpLayers?: number;
    /** The weights' total size: the safetensors index's `metadata.total_size`, else the .safetensors files' sizes. */
    weightsBytes?: number;
    /**
     * The context length SGLang derives from config.json (see BOX_FACTS_SCRIPT);
     * absent when config.json names none of its keys (the transformers class's
     * default then applies, which only the release knows).
     */
    contextLength?: number;
    /**
     * The folder as it is now, cheap to recompute: a digest of each regular
     * file's name, size and modification time (ns) and of config.json's bytes.
     * A drafter republished in place under the same path changes it.
     */
    folderDigest?: string;
    /** The text config's `num_attention_heads` and `num_key_value_heads`, which tensor parallelism splits. */
    attentionHeads?: number;
    kvHeads?: number;
    /**
     * config.json as the box has it (at most CONFIG_JSON_MAX_BYTES; absent when
     * larger): what the declared release's own code reads at the preview's
     * verdict (providers/sglang-server/verdict.ts) in place of the box's folder.
     */
    configJson?: string;
}

/** The box's facts as a read found them, or why the read failed. */
export type BoxFactsRead = BoxFacts | { error: string };

/** config.json larger than this is not carried (Qwen3.6-27B's is about 5 KB). */
export const CONFIG_JSON_MAX_BYTES = 262144;

/**
 * Run by the configured interpreter as `<python> -I -c BOX_FACTS_SCRIPT <model
 * path> sglang`: prints one JSON object. Reads files only; the distribution
 * name comes as an argument.
 */
export const BOX_FACTS_SCRIPT = `import glob, hashlib, json, os, stat, sys
import importlib.metadata as md
path, dist = sys.argv[1], sys.argv[2]
out = {}
if sys.argv[3:]:
    out["sglangVersion"] = None
    out["python"] = sys.argv[3]
else:
    try:
        out["sglangVersion"] = md.version(dist)
    except md.PackageNotFoundError:
        out["sglangVersion"] = None
    if os.path.exists(os.path.join(sys.prefix, "${STAGING_MARKER}")):
        out["python"] = "staging"
config = os.path.join(path, "config.json")
if not os.path.isdir(path):
    out["model"] = "missing"
elif not os.path.isfile(config):
    out["model"] = "no-config"
else:
    try:
        with open(config, "rb") as f:
            raw = f.read(${CONFIG_JSON_MAX_BYTES} + 1)
        c = json.loads(raw)
        if len(raw) <= ${CONFIG_JSON_MAX_BYTES}:
            out["configJson"] = raw.decode("utf-8")
        t = c.get("text_config") or {}
        get = lambda k: c.get(k, t.get(k))
        out["model"] = "present"
        out["architecture"] = (c.get("architectures") or [None])[0]
        out["layerTypes"] = get("layer_types")
        out["mtpLayers"] = get("mtp_num_hidden_layers") or get("num_nextn_predict_layers") or 0
        # SGLang's derived context length (srt/utils/hf_transformers/common.py, the same in 0.5.11 and 0.5.23):
        # get_hf_text_config's sub-config, then get_context_length's keys and rope scaling factor.
        if isinstance(c.get("thinker_config"), dict):
            tc = c["thinker_config"].get("text_config") if isinstance(c["thinker_config"].get("text_config"), dict) else c["thinker_config"]
        else:
            tc = next((c[k] for k in ("llm_config", "language_config", "text_config") if isinstance(c.get(k), dict)), c)
        rope = tc.get("rope_scaling")
        factor = 1
        if isinstance(rope, dict) and rope:
            factor = rope.get("factor", 1)
            if "original_max_position_embeddings" in rope or rope.get("rope_type") == "llama3":
                factor = 1
        for k, key in (("attentionHeads", "num_attention_heads"), ("kvHeads", "num_key_value_heads")):
            if isinstance(tc.get(key), int) and not isinstance(tc.get(key), bool) and tc[key] > 0:
                out[k] = tc[key]
        for k in ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings"):
            v = tc.get(k)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and isinstance(factor, (int, float)):
                out["contextLength"] = int(factor * v)
                break
    except (OSError, ValueError, AttributeError, TypeError):
        out["model"] = "unreadable-config"
    h = hashlib.sha256()
    try:
        names = sorted(os.listdir(path))
    except OSError:
        names = []
    for name in names:
        try:
            st = os.stat(os.path.join(path, name))
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            h.update(("%s\\0%d\\0%d\\n" % (name, st.st_size, st.st_mtime_ns)).encode())
    try:
        with open(config, "rb") as f:
            h.update(f.read())
    except OSError:
        pass
    out["folderDigest"] = h.hexdigest()[:32]
    index = os.path.join(path, "model.safetensors.index.json")
    try:
        with open(index) as f:
            out["weightsBytes"] = int(json.load(f)["metadata"]["total_size"])
    except (OSError, ValueError, KeyError, TypeError):
        files = glob.glob(os.path.join(path, "*.safetensors"))
        if files:
            out["weightsBytes"] = sum(os.path.getsize(p) for p in files)
print(json.dumps(out))
`;

/** Exit status of the launcher when a path is not root's alone (nothing of the interpreter's site ran). */
export const BOX_FACTS_UNTRUSTED_EXIT = 3;

/**
 * Run by the configured interpreter without its site (`<python> -I -S -c
 * SYS_PATH_SCRIPT`): prints `{"dirs": [...], "files": [...]}`, every
 * directory its sys.path will hold once site runs and the files site reads to
 * build it (pyvenv.cfg, each .pth), computed as site.py computes them
 * (site.venv, getsitepackages, addpackage) without running any of it: no .pth
 * line is executed, so a planted one cannot run here.
 */
export const SYS_PATH_SCRIPT = `import json, os, site, sys
exe_dir = os.path.dirname(os.path.abspath(sys.executable))
prefixes, files = [sys.prefix, sys.exec_prefix], []
for conf in (os.path.join(exe_dir, "pyvenv.cfg"), os.path.join(os.path.dirname(exe_dir), "pyvenv.cfg")):
    if os.path.isfile(conf):
        files.append(conf)
        system_site = "true"
        with open(conf, encoding="utf-8", errors="surrogateescape") as f:
            for line in f:
                key, eq, value = line.partition("=")
                if eq and key.strip().lower() == "include-system-site-packages":
                    system_site = value.strip().lower()
        prefixes = [os.path.dirname(exe_dir)] + ([sys.base_prefix, sys.base_exec_prefix] if system_site == "true" else [])
        break
dirs = list(sys.path)
for sitedir in site.getsitepackages(prefixes):
    dirs.append(sitedir)
    try:
        names = sorted(n for n in os.listdir(sitedir) if n.endswith(".pth") and not n.startswith("."))
    except OSError:
        continue
    for name in names:
        pth = os.path.join(sitedir, name)
        files.append(pth)
        try:
            with open(pth, "rb") as f:
                lines = f.read().decode("utf-8", "surrogateescape").splitlines()
        except OSError:
            continue
        for line in lines:
            if line.startswith(("#", "import ", "import\\t")) or not line.strip():
                continue
            d = os.path.abspath(os.path.join(sitedir, line.rstrip()))
            if os.path.exists(d):
                dirs.append(d)
print(json.dumps({"dirs": dirs, "files": files}))
`;

/**
 * Run by the box's own python3 (`python3 -I -c BOX_FACTS_LAUNCHER <python>
 * <model path> sglang [staged]`), before the configured interpreter's site
 * runs. A path is root's alone when every component, symlinks followed (each
 * link and its target), is owned by root and not writable by its group or
 * others; a component that does not exist ends the walk (its parent is root's
 * alone, so only root can make it). Otherwise the launcher exits
 * BOX_FACTS_UNTRUSTED_EXIT naming the component. In order (issue 19, issue 34
 * finding 4: a .pth file in a writable site-packages runs as root):
 *
 * 1. the interpreter's path and the model folder's;
 * 2. `staged` (a python under --venv-root, a venv the stack stages): the venv
 *    must carry STAGED_MARKER, else its python never runs and the facts say
 *    `unstaged` (or `staging` while STAGING_MARKER is there);
 * 3. its pyvenv.cfg, the `home` it names and the standard library beside that
 *    (what the interpreter reads before any code of ours runs);
 * 4. the interpreter, run without site (-I -S), lists its sys.path as site
 *    would build it (SYS_PATH_SCRIPT): every directory on it, and each .pth
 *    file, must be root's alone;
 * 5. then it runs `<python> -I -c BOX_FACTS_SCRIPT <model path> sglang`.
 *
 * When that python does not exist, the launcher runs the script itself with
 * `missing` (the model's facts still count; a venv the rollout stages is not
 * there yet). Files inside the directories (modules, subpackages) are not
 * walked: root wrote them there, and their modes are root's to keep.
 */
export const BOX_FACTS_LAUNCHER = `import glob, json, os, stat, subprocess, sys
python, model, dist = sys.argv[1], sys.argv[2], sys.argv[3]
staged = sys.argv[4:] == ["staged"]
FACTS = ${JSON.stringify(BOX_FACTS_SCRIPT)}
SYS_PATH = ${JSON.stringify(SYS_PATH_SCRIPT)}
def refuse(what, why):
    sys.stderr.write("box-facts: %s %s: only root may own and write the interpreter, the model, every directory on the way to them and on the interpreter's sys.path; nothing of the interpreter's site was run\\n" % (quoted(what), why))
    sys.exit(${BOX_FACTS_UNTRUSTED_EXIT})
def quoted(text):
    return repr(text)[:300]
def trusted(path):
    if not path.startswith("/"):
        refuse(path, "is not an absolute path")
    todo, here, links = [p for p in path.split("/") if p], "/", 0
    st = os.lstat("/")
    if st.st_uid != 0 or st.st_mode & 0o022:
        refuse("/", "is not root's alone")
    while todo:
        name = todo.pop(0)
        if name == ".":
            continue
        step = os.path.normpath(os.path.join(here, name))
        try:
            st = os.lstat(step)
        except FileNotFoundError:
            return
        if st.st_uid != 0:
            refuse(step, "is owned by uid %d, not root" % st.st_uid)
        if stat.S_ISLNK(st.st_mode):
            links += 1
            if links > 40:
                refuse(path, "has too many symbolic links")
            target = os.readlink(step)
            todo = [p for p in target.split("/") if p] + todo
            if target.startswith("/"):
                here = "/"
            continue
        if st.st_mode & 0o022:
            refuse(step, "is writable by its group or others (mode %o)" % stat.S_IMODE(st.st_mode))
        here = step
def facts_without(python_state):
    os.execv(sys.executable, [sys.executable, "-I", "-c", FACTS, model, dist, python_state])
def staged_state():
    venv = os.path.dirname(os.path.dirname(python))
    if os.path.lexists(os.path.join(venv, "${STAGING_MARKER}")):
        return "staging"
    try:
        st = os.lstat(os.path.join(venv, "${STAGED_MARKER}"))
    except FileNotFoundError:
        return "unstaged"
    return None if stat.S_ISREG(st.st_mode) and st.st_uid == 0 else "unstaged"
def before_start():
    exe_dir = os.path.dirname(os.path.abspath(python))
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(python)))
    for conf in (os.path.join(exe_dir, "pyvenv.cfg"), os.path.join(os.path.dirname(exe_dir), "pyvenv.cfg")):
        if not os.path.lexists(conf):
            continue
        trusted(conf)
        with open(conf, encoding="utf-8", errors="surrogateescape") as f:
            for line in f:
                key, eq, value = line.partition("=")
                if eq and key.strip().lower() == "home" and value.strip():
                    trusted(value.strip())
                    prefix = os.path.dirname(os.path.abspath(value.strip()))
        break
    for lib in sorted(glob.glob(os.path.join(glob.escape(prefix), "lib*", "python3*"))):
        trusted(lib)
def sys_path():
    try:
        r = subprocess.run([python, "-I", "-S", "-c", SYS_PATH], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        listed = json.loads(r.stdout.decode("utf-8", "surrogateescape")) if r.returncode == 0 else None
    except (OSError, ValueError, subprocess.TimeoutExpired) as e:
        r, listed = e, None
    if not isinstance(listed, dict) or not all(isinstance(listed.get(k), list) and all(isinstance(p, str) for p in listed[k]) for k in ("dirs", "files")):
        why = "exit %d: %s" % (r.returncode, r.stderr.decode("utf-8", "replace").strip()[-300:]) if isinstance(r, subprocess.CompletedProcess) else str(r)
        sys.stderr.write("box-facts: cannot list the sys.path of %s (%s); its site was not run\\n" % (quoted(python), why))
        sys.exit(127)
    return listed["dirs"] + listed["files"]
trusted(python)
trusted(model)
if not os.path.exists(python):
    facts_without("missing")
state = staged_state() if staged else None
if state is not None:
    facts_without(state)
before_start()
for path in sys_path():
    trusted(path)
try:
    os.execv(python, [python, "-I", "-c", FACTS, model, dist])
except OSError as e:
    sys.stderr.write("box-facts: cannot run %s: %s\\n" % (quoted(python), e.strerror))
    sys.exit(127)
`;

/**
 * The box-facts read: the box's python3 checks the paths, then runs the
 * configured interpreter (BOX_FACTS_LAUNCHER). `staged`: the python is of a
 * venv the stack stages (BoxExpectations.stagedVenv), which runs only with
 * the stack's STAGED_MARKER in it.
 */
export function boxFactsCommand(python: string, modelPath: string, staged = false): string[] {
    // -I: no PYTHON* variables, no user site directory, nothing from the working directory.
    return ["python3", "-I", "-c", BOX_FACTS_LAUNCHER, python, modelPath, "sglang", ...(staged ? ["staged"] : [])];
}

export class BoxFactsError extends Error {}

export function parseBoxFacts(stdout: string): BoxFacts {
    let value: unknown;
    try {
        value = JSON.parse(stdout.trim());
    } catch {
        throw new BoxFactsError(`the box's facts are not JSON: ${stdout.slice(0, 200)}`);
    }
    const v = value as Partial<BoxFacts> | null;
    if (!v || typeof v !== "object" || !["present", "missing", "no-config", "unreadable-config"].includes(String(v.model))) {
        throw new BoxFactsError(`the box's facts are not the expected object: ${stdout.slice(0, 200)}`);
    }
    return {
        sglangVersion: typeof v.sglangVersion === "string" ? v.sglangVersion : null,
        ...(v.python === "missing" || v.python === "staging" || v.python === "unstaged" ? { python: v.python } : {}),
        model: v.model as BoxFacts["model"],
        ...(typeof v.architecture === "string" ? { architecture: v.architecture } : {}),
        ...(Array.isArray(v.layerTypes) ? { layerTypes: v.layerTypes.map(String) } : {}),
        ...(typeof v.mtpLayers === "number" ? { mtpLayers: v.mtpLayers } : {}),
        ...(typeof v.weightsBytes === "number" ? { weightsBytes: v.weightsBytes } : {}),
        ...(typeof v.contextLength === "number" ? { contextLength: v.contextLength } : {}),
        ...(typeof v.folderDigest === "string" ? { folderDigest: v.folderDigest } : {}),
        ...(typeof v.attentionHeads === "number" ? { attentionHeads: v.attentionHeads } : {}),
        ...(typeof v.kvHeads === "number" ? { kvHeads: v.kvHeads } : {}),
        ...(typeof v.configJson === "string" ? { configJson: v.configJson } : {}),
    };
}

/** What the declared server expects of the box. */
export interface BoxExpectations {
    python: string;
    sglangVersion: string;
    modelPath: string;
    /** Declared, or left out to take the box's. */
    architecture?: string;
    weightsGB?: number;
    /** The settings SGLang judges, to judge them with the box's architecture when it was left out. */
    serverArgs: Omit<ServerArgsInput, "architecture" | "layerTypes">;
    /** For the memory check with the box's weights when weightsGB was left out. */
    /** `placement`: how the weights are split, scaled and offloaded (core/box/gpu-fit.ts); absent in states of older versions (tp alone). */
    memory: { tensorParallelSize: number; memFractionStatic?: number; gpuMemoryMiB?: number; placement?: WeightsPlacement };
    /**
     * `--context-length N` in extraArgs, where it is (`index`) and as written;
     * `allowLonger` when SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is on (SGLang
     * then warns instead of failing). Absent with `--json-model-override-args`,
     * which can change what SGLang derives.
     */
    contextLength?: { value: number; index: number; shown: string; allowLonger: boolean };
    /** The tensor-parallel size the attention heads are split over; absent with --enable-dp-attention (heads split over tp / dp). */
    attentionTpSize?: number;
    /** service.speculative.draftModelDigest: the drafter folder's digest the server must load. */
    drafterDigest?: string;
    /** The venv the rollout stages when it is missing (service.venv, not adopted): `python` is its interpreter. */
    stagedVenv?: string;
    /** service.model.source: modelPath is the revision folder the rollout stages before the stop, so its absence is not a contradiction (issue 33). */
    modelFromSource?: boolean;
}

/** What the declared service expects of the box. */
export function boxExpectations(service: ServiceConfig, gpuMemoryMiB?: number): BoxExpectations {
    const interval = extraFlagInteger(service.extraArgs, "--mamba-track-interval");
    const context = extraFlagInteger(service.extraArgs, "--context-length");
    const overridden = extraFlagValues(service.extraArgs, "--json-model-override-args") !== undefined;
    const allowLonger = parseSglangBool(service.environment[ALLOW_LONGER_CONTEXT_ENV] ?? "") === true;
    const { draftModelDigest, ...speculative } = service.speculative ?? { algorithm: "" };
    return {
        python: servicePython(service),
        sglangVersion: service.sglangVersion,
        modelPath: service.model.path,
        ...(service.model.architecture !== undefined ? { architecture: service.model.architecture } : {}),
        ...(service.model.weightsGB !== undefined ? { weightsGB: service.model.weightsGB } : {}),
        serverArgs: {
            ...(service.speculative ? { speculative } : {}),
            ...(service.mambaSchedulerStrategy ? { mambaSchedulerStrategy: service.mambaSchedulerStrategy } : {}),
            disableRadixCache: service.disableRadixCache,
            ...(service.maxRunningRequests !== undefined ? { maxRunningRequests: service.maxRunningRequests } : {}),
            ...(interval ? { mambaTrackInterval: interval.value } : {}),
            environment: service.environment,
        },
        memory: {
            tensorParallelSize: service.tensorParallelSize,
            ...(service.memFractionStatic !== undefined ? { memFractionStatic: service.memFractionStatic } : {}),
            ...(gpuMemoryMiB !== undefined ? { gpuMemoryMiB } : {}),
            placement: weightsPlacement(service),
        },
        ...(parallelLayout(service).dpAttention ? {} : { attentionTpSize: service.tensorParallelSize }),
        ...(draftModelDigest !== undefined ? { drafterDigest: draftModelDigest } : {}),
        ...(service.venv && service.venv.adopt[service.sglangVersion] === undefined ? { stagedVenv: releaseVenvDir(service.venv, service.sglangVersion) } : {}),
        ...(service.model.source !== undefined ? { modelFromSource: true } : {}),
        ...(context && !overridden
            ? { contextLength: { value: context.value, index: context.given.index, shown: shownExtraFlag(context.given), allowLonger } }
            : {}),
    };
}

export interface BoxContradiction {
    /** The config key, as the preview names it. */
    property: string;
    reason: string;
}

/** The drafter folder a declared server loads besides the model (a separate draft model path), if any. */
export function drafterPath(expect: BoxExpectations | undefined): string | undefined {
    const path = expect?.serverArgs.speculative?.draftModelPath;
    return path !== undefined && path !== expect?.modelPath ? path : undefined;
}

/**
 * The declared drafter digest (service.speculative.draftModelDigest) against
 * the drafter folder's facts read on the box (absent: not read, or an error:
 * unreadable): undefined when none is declared or they agree, else why the
 * drafter is refused, naming both digests and the fix.
 */
export function drafterDigestRefusal(expect: BoxExpectations | undefined, drafter: BoxFacts | { error: string } | undefined): BoxContradiction | undefined {
    const declared = expect?.drafterDigest;
    const path = drafterPath(expect);
    if (declared === undefined || path === undefined) return undefined;
    const property = "service.speculative.draftModelDigest";
    if (drafter === undefined || "error" in drafter) {
        return { property, reason: `${property} pins ${path}, which cannot be read on the box${drafter ? `: ${drafter.error}` : ""}` };
    }
    if (drafter.folderDigest === declared) return undefined;
    const now = drafter.folderDigest ?? "(none)";
    return {
        property,
        reason:
            `${property} is ${declared}, but the drafter folder ${path} on the box has digest ${now}: it holds another drafter than the one pinned. ` +
            `Copy the pinned drafter back, or declare ${now} to serve what is there.`,
    };
}

/** Declared weights within this share of the box's size agree (the field's 52 GB against 53.8e9 bytes). */
const WEIGHTS_TOLERANCE = 0.1;

/**
 * Where the box contradicts the declared server, or cannot serve it: each with
 * the key, the declared and the found value, and the fix. Empty when it can.
 */
export function boxContradictions(expect: BoxExpectations, facts: BoxFacts): BoxContradiction[] {
    const found: BoxContradiction[] = [];
    if (facts.python === "unstaged") {
        // Its python was not run (core/box/box-facts.ts BOX_FACTS_LAUNCHER): a venv the stack did not make may hold anything.
        found.push({
            property: "service.venv",
            reason: `${expect.stagedVenv ?? expect.python} exists but the stack did not stage it (it has no ${STAGED_MARKER}), so its python is not run: remove it (the rollout then installs ${expect.sglangVersion} there), or name it in service.venv.adopt.`,
        });
    } else if (facts.python !== undefined) {
        // Not there yet, or its staging was cut short: the rollout stages it (before anything stops); else nothing can start.
        if (expect.stagedVenv === undefined) {
            found.push({
                property: "service.python",
                reason: `${expect.python} ${facts.python === "missing" ? "does not exist on the box" : "is a venv whose staging did not finish"}: point service.python at the venv that has SGLang ${expect.sglangVersion}, or let the stack install it (service.venv).`,
            });
        }
    } else if (expect.stagedVenv !== undefined && facts.sglangVersion !== expect.sglangVersion) {
        // The stack's path for the release holds a venv it did not stage: never overwritten.
        found.push({
            property: "service.venv",
            reason: `${expect.stagedVenv} exists but has ${facts.sglangVersion === null ? "no sglang" : `SGLang ${facts.sglangVersion}`}, not the declared ${expect.sglangVersion}, and the stack did not stage it: remove it (the rollout then installs ${expect.sglangVersion} there), or name the venv that has it in service.venv.adopt.`,
        });
    } else if (facts.sglangVersion === null) {
        found.push({
            property: "service.python",
            reason: `${expect.python} has no sglang installed (no package metadata for the distribution sglang): point service.python at the venv that has SGLang ${expect.sglangVersion}.`,
        });
    } else if (facts.sglangVersion !== expect.sglangVersion) {
        found.push({
            property: "service.sglangVersion",
            reason: `service.sglangVersion is ${expect.sglangVersion} but ${expect.python} has SGLang ${facts.sglangVersion} installed: declare sglangVersion: ${facts.sglangVersion}, or point service.python at a venv with ${expect.sglangVersion}.`,
        });
    }
    // A declared source's revision folder is there once the rollout staged it (before the stop): until then nothing in it can be judged.
    if (facts.model === "missing" && expect.modelFromSource === true) return found;
    if (facts.model !== "present") {
        const what =
            facts.model === "missing"
                ? "does not exist on the box"
                : facts.model === "no-config"
                  ? "has no config.json"
                  : "has a config.json that cannot be read";
        found.push({ property: "service.model.path", reason: `service.model.path ${expect.modelPath} ${what}: copy the model there or fix the path.` });
        return found;
    }
    if (expect.architecture !== undefined && facts.architecture !== undefined && facts.architecture !== expect.architecture) {
        found.push({
            property: "service.model.architecture",
            reason: `service.model.architecture is ${expect.architecture} but ${expect.modelPath}/config.json says ${facts.architecture}: declare ${facts.architecture}, or leave architecture out to take the box's.`,
        });
    }
    if (expect.weightsGB !== undefined && facts.weightsBytes !== undefined) {
        const foundGB = facts.weightsBytes / 1e9;
        if (Math.abs(foundGB - expect.weightsGB) > WEIGHTS_TOLERANCE * foundGB) {
            found.push({
                property: "service.model.weightsGB",
                reason: `service.model.weightsGB is ${expect.weightsGB} but the weights in ${expect.modelPath} are ${foundGB.toFixed(1)} GB: declare weightsGB: ${Math.round(foundGB)}, or leave it out to take the box's.`,
            });
        }
    }
    const spec = expect.serverArgs.speculative;
    const ownHead = spec && (spec.algorithm === "NEXTN" || (spec.algorithm === "EAGLE" && spec.draftModelPath === undefined));
    if (ownHead && (facts.mtpLayers ?? 0) === 0) {
        found.push({
            property: "service.speculative.algorithm",
            reason: `service.speculative.algorithm is ${spec!.algorithm}, which drafts with the checkpoint's own MTP layers, but ${expect.modelPath}/config.json has none (no mtp_num_hidden_layers or num_nextn_predict_layers): use a drafter (EAGLE3 or DFLASH with draftModelPath) or a checkpoint with an MTP head.`,
        });
    }
    // What the declared config left to the box: SGLang's rules with the box's architecture, the memory check with its weights.
    const release = sglangRelease(expect.sglangVersion);
    // The transcribed rules for the releases they were read from (another release: its own code's verdict, providers/sglang-server/verdict.ts).
    if (expect.architecture === undefined && facts.architecture !== undefined && release.verified) {
        const verdict = judgeServerArgs(release, {
            ...expect.serverArgs,
            architecture: facts.architecture,
            layerTypes: facts.layerTypes,
        });
        for (const r of verdict.refusals) {
            found.push({
                property: r.key,
                reason: `${r.key}: on this box's ${facts.architecture} (from config.json), SGLang ${expect.sglangVersion} refuses it at startup with ${r.error}; fix: ${r.fix}.`,
            });
        }
    }
    const context = expect.contextLength;
    if (context && facts.contextLength !== undefined && context.value > facts.contextLength && !context.allowLonger) {
        found.push({
            property: `service.extraArgs[${context.index}]`,
            reason:
                `service.extraArgs[${context.index}] is ${context.shown}: SGLang ${expect.sglangVersion} refuses it at startup with ` +
                `ValueError: Warning: User-specified context_length (${context.value}) is greater than the derived context_length (${facts.contextLength}). ` +
                `This may lead to incorrect model outputs or CUDA errors. Note that the derived context_length may differ from max_position_embeddings in the model's config. ` +
                `To allow overriding this maximum, set the env var ${ALLOW_LONGER_CONTEXT_ENV}=1; fix: --context-length ${facts.contextLength} or less ` +
                `(what ${expect.modelPath}/config.json gives), or rope scaling in --json-model-override-args, or ${ALLOW_LONGER_CONTEXT_ENV}: "1" in service.environment at your own risk.`,
        });
    }
    const heads = headsSplit(expect, facts);
    if (heads) found.push(heads);
    const { tensorParallelSize: tp, memFractionStatic, gpuMemoryMiB } = expect.memory;
    const placement = expect.memory.placement ?? { shards: tp, scale: 1, offloadGiB: 0 };
    // With the fraction SGLang picks itself, or KTransformers' expert offload, SGLang's own verdict judges the fit with
    // the fraction it resolves and the box's config.json (core/sglang/verdict-fit.ts).
    if (
        expect.weightsGB === undefined &&
        facts.weightsBytes !== undefined &&
        gpuMemoryMiB !== undefined &&
        memFractionStatic !== undefined &&
        !placement.cpuExperts
    ) {
        const weightsGB = facts.weightsBytes / 1e9;
        const fit = staticPoolFit(weightsGB, memFractionStatic, gpuMemoryMiB, placement);
        if (!fit.fits) {
            found.push({
                property: "service.tensorParallelSize",
                reason: `the weights in ${expect.modelPath} (${weightsGB.toFixed(1)} GB, from the box${describePlacement(placement)}) over tensorParallelSize ${tp} need ${fit.needGiB.toFixed(1)} GiB per GPU with the reserve, but the static pool is ${fit.budgetGiB.toFixed(1)} GiB: raise tensorParallelSize or memFractionStatic.`,
            });
        }
    }
    return found;
}

/**
 * Tensor parallelism splits the attention heads: SGLang's QKVParallelLinear
 * (srt/layers/linear.py) divides the heads by tp, and the KV heads by tp or tp
 * by the KV heads (replicated when fewer), with distributed/utils.py
 * ensure_divisibility, an AssertionError while the weights load. (The linear
 * attention heads of hybrid models are split with a plain `//`, no check.)
 */
function headsSplit(expect: BoxExpectations, facts: BoxFacts): BoxContradiction | undefined {
    const tp = expect.attentionTpSize;
    const { attentionHeads: heads, kvHeads } = facts;
    if (tp === undefined || tp <= 1 || heads === undefined) return undefined;
    const splits = (d: number) => heads % d === 0 && (kvHeads === undefined || (d >= kvHeads ? d % kvHeads === 0 : kvHeads % d === 0));
    const fails = (numerator: number, denominator: number) =>
        numerator % denominator !== 0 && `AssertionError: ${numerator} is not divisible by ${denominator}`;
    const error = fails(heads, tp) || (kvHeads !== undefined && (tp >= kvHeads ? fails(tp, kvHeads) : fails(kvHeads, tp)));
    if (!error) return undefined;
    return {
        property: "service.tensorParallelSize",
        reason:
            `service.tensorParallelSize is ${tp} but ${expect.modelPath}/config.json has ${heads} attention heads` +
            (kvHeads !== undefined ? ` and ${kvHeads} KV heads` : "") +
            `: SGLang ${expect.sglangVersion} fails loading the weights with ${error} (QKVParallelLinear); ` +
            `use a tensorParallelSize that splits them: ${Array.from({ length: heads - 1 }, (_, i) => i + 2)
                .filter(splits)
                .join(", ")}.`,
    };
}
