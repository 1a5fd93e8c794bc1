/**
 * The fleet lab's GPUs: one per server of the fleet phases, each holding its
 * server's 27B model at TP 1 (a stack's servers on one box have GPUs of their
 * own: core/config/rules.ts). The lab numbers at most 32 GPUs
 * (lab/control.ts gpuSpecs); the default phases place 1 + 4 + 16 + 4 = 25.
 */
export const FLEET_GPU = { name: "NVIDIA H200", memoryMiB: 143771 };
export const FLEET_MAX_SERVERS = 32;
export const FLEET_BASE_PORT = 30000;

export interface FleetMember {
    name: string;
    port: number;
    /** Its GPU, numbered as in the container. */
    gpu: number;
}

/**
 * Who runs which servers. One owner per unit (core/unit/ownership.ts): a server
 * adopted by one stack is refused to every other, so each fleet program and
 * each one-service stack gets servers of its own, all on the one fleet box:
 * the program of N has `n<N>-0` .. `n<N>-<N-1>`, the i-th one-service stack
 * `s<i>`; ports 30000 upwards and GPUs 0 upwards in that order.
 */
export interface FleetPlan {
    /** The fleet program's members, by N. */
    programs: Map<number, FleetMember[]>;
    /** The one-service stacks' servers, one each. */
    stacks: FleetMember[];
    /** Every server the bench places on the box. */
    all: FleetMember[];
    /**
     * Every server's `--watchdog-timeout`: a value no earlier bench run
     * declared, so that each program's first preview runs SGLang's verdict
     * (providers/sglang-server/verdict.ts keeps verdicts by their request, across
     * runs) as it would for a fleet declared anew.
     */
    watchdogTimeoutSeconds: number;
}

/** The stack of the fleet program of N servers. */
export function programStack(n: number): string {
    return `fleet${n}`;
}

/** The one-service stack of a member of `plan.stacks`. */
export function oneServiceStack(member: FleetMember): string {
    return `fleet-${member.name}`;
}

/** The stack that runs a member (its unit's one owner): its program's, or its own one-service stack. */
export function stackOf(member: FleetMember, plan: FleetPlan): string {
    for (const [n, members] of plan.programs) if (members.includes(member)) return programStack(n);
    return oneServiceStack(member);
}

export function planFleet(programSizes: number[], stackCount: number, watchdogTimeoutSeconds = 300 + (Date.now() % 1_000_000) / 1000): FleetPlan {
    for (const n of programSizes) {
        if (!Number.isInteger(n) || n < 1) throw new Error(`--fleet sizes must be positive integers, got ${n}`);
    }
    if (new Set(programSizes).size !== programSizes.length) throw new Error(`--fleet lists a size twice: ${programSizes.join(",")}`);
    const all: FleetMember[] = [];
    const member = (name: string): FleetMember => {
        const m = { name, port: FLEET_BASE_PORT + all.length, gpu: all.length };
        all.push(m);
        return m;
    };
    const programs = new Map(programSizes.map((n) => [n, Array.from({ length: n }, (_, i) => member(`n${n}-${i}`))]));
    const stacks = Array.from({ length: stackCount }, (_, i) => member(`s${i}`));
    if (all.length > FLEET_MAX_SERVERS) {
        throw new Error(
            `the fleet phases need ${all.length} servers (--fleet ${programSizes.join(",")} and ${stackCount} one-service stacks) ` +
                `but the fleet lab has ${FLEET_MAX_SERVERS} GPUs, one per server: ask for smaller --fleet or --stacks sizes`,
        );
    }
    return { programs, stacks, all, watchdogTimeoutSeconds };
}
