import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import ts from "typescript";

// No mutable module-level state in providers/ or remote/: what one resource
// tells another travels as outputs and inputs, and what a run shares is the
// run's (providers/provider-run.ts), handed to each verb. A module global
// only works because one process happens to serve every resource, and tests
// can only reach it by patching it.

/** The one process-wide holder allowed: providers/context.ts's run of this process (see its comment). */
const ALLOWED = new Set(["providers/context.ts thisProcess"]);

/** Containers that are state only when something changes them. */
const CONTAINERS = new Set(["Map", "Set", "WeakMap", "WeakSet", "Array", "Object"]);

/** Constructors whose instances hold no state to share. */
const STATELESS = new Set(["RegExp", "URL", "TextEncoder", "TextDecoder"]);

/** Methods that change a Map, Set or array. */
const MUTATORS = new Set(["set", "add", "delete", "clear", "push", "pop", "shift", "unshift", "splice", "sort", "reverse", "fill", "copyWithin"]);

const ASSIGNMENTS = new Set([
    ts.SyntaxKind.EqualsToken,
    ts.SyntaxKind.PlusEqualsToken,
    ts.SyntaxKind.MinusEqualsToken,
    ts.SyntaxKind.QuestionQuestionEqualsToken,
    ts.SyntaxKind.BarBarEqualsToken,
    ts.SyntaxKind.AmpersandAmpersandEqualsToken,
]);

/** The name an expression starts from (`a` for `a.b[c].d`), if it is a plain name. */
function rootName(e: ts.Expression): string | undefined {
    let at = e;
    while (
        ts.isPropertyAccessExpression(at) ||
        ts.isElementAccessExpression(at) ||
        ts.isNonNullExpression(at) ||
        ts.isParenthesizedExpression(at) ||
        ts.isAsExpression(at) ||
        ts.isTypeAssertionExpression(at) ||
        ts.isSatisfiesExpression(at)
    ) {
        at = at.expression;
    }
    return ts.isIdentifier(at) ? at.text : undefined;
}

/** Findings in one module's text: top-level let/var, stateful top-level consts, mutated ones, globalThis writes. */
export function moduleStateFindings(file: string, text: string): string[] {
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
    const findings: string[] = [];
    const topConsts = new Set<string>();
    const where = (node: ts.Node) => `${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
    const flag = (name: string, node: ts.Node, what: string) => {
        if (!ALLOWED.has(`${file} ${name}`)) findings.push(`${where(node)} ${name}: ${what}`);
    };

    for (const statement of source.statements) {
        if (ts.isVariableStatement(statement)) {
            const constant = (statement.declarationList.flags & ts.NodeFlags.Const) !== 0;
            for (const d of statement.declarationList.declarations) {
                const name = d.name.getText(source);
                if (!constant) {
                    flag(name, d, "a module-level let or var");
                    continue;
                }
                topConsts.add(name);
                const init = d.initializer;
                if (init && ts.isNewExpression(init)) {
                    const ctor = init.expression.getText(source);
                    if (!CONTAINERS.has(ctor) && !STATELESS.has(ctor)) flag(name, d, `a module-level instance of ${ctor}`);
                }
            }
        }
        if (ts.isClassDeclaration(statement)) {
            for (const member of statement.members) {
                if (!ts.isPropertyDeclaration(member)) continue;
                const mods = ts.getModifiers(member) ?? [];
                const isStatic = mods.some((m) => m.kind === ts.SyntaxKind.StaticKeyword);
                const isReadonly = mods.some((m) => m.kind === ts.SyntaxKind.ReadonlyKeyword);
                const container =
                    member.initializer !== undefined &&
                    (ts.isNewExpression(member.initializer) ||
                        ts.isArrayLiteralExpression(member.initializer) ||
                        ts.isObjectLiteralExpression(member.initializer));
                if (isStatic && (!isReadonly || container))
                    flag(`${statement.name?.text ?? "class"}.${member.name.getText(source)}`, member, "a mutable static field");
            }
        }
    }

    // Names bound to globalThis anywhere in the module (`const g = globalThis as ...`): a write through one is a write to globalThis.
    const globals = new Set(["globalThis"]);
    const collect = (node: ts.Node): void => {
        if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer && rootName(node.initializer) === "globalThis")
            globals.add(node.name.text);
        ts.forEachChild(node, collect);
    };
    collect(source);

    const visit = (node: ts.Node): void => {
        // x = ..., x.y = ..., x[k] ??= ...
        if (ts.isBinaryExpression(node) && ASSIGNMENTS.has(node.operatorToken.kind)) {
            const root = rootName(node.left);
            if (root !== undefined && globals.has(root) && !ts.isIdentifier(node.left)) flag("globalThis", node, "a write to globalThis");
            else if (root !== undefined && topConsts.has(root) && !ts.isIdentifier(node.left)) flag(root, node, "a module-level const changed");
        }
        if (ts.isDeleteExpression(node)) {
            const root = rootName(node.expression);
            if (root !== undefined && globals.has(root)) flag("globalThis", node, "a write to globalThis");
            else if (root !== undefined && topConsts.has(root)) flag(root, node, "a module-level const changed");
        }
        if (ts.isCallExpression(node)) {
            const callee = node.expression;
            if (ts.isPropertyAccessExpression(callee)) {
                const root = rootName(callee.expression);
                if (root !== undefined && topConsts.has(root) && MUTATORS.has(callee.name.text))
                    flag(root, node, `a module-level const changed (.${callee.name.text})`);
                // Object.assign(globalThis, ...), Object.defineProperty(globalThis, ...), Reflect.set(globalThis, ...)
                const first = node.arguments[0];
                if (
                    first &&
                    ts.isIdentifier(first) &&
                    first.text === "globalThis" &&
                    /^(Object|Reflect)\.(assign|defineProperty|defineProperties|set)$/.test(callee.getText(source))
                ) {
                    flag("globalThis", node, "a write to globalThis");
                }
            }
        }
        ts.forEachChild(node, visit);
    };
    visit(source);
    return findings;
}

describe("no mutable module-level state in providers/ and remote/", () => {
    const root = path.resolve(__dirname, "../..");
    // Every module at any depth (providers/sglang-server/, remote/checks/, ...).
    const modules = ["providers", "remote"].flatMap((dir) =>
        fs
            .readdirSync(path.join(root, dir), { recursive: true, encoding: "utf8" })
            .filter((f) => f.endsWith(".ts"))
            .map((f) => `${dir}/${f}`),
    );

    it("finds none: what a run shares is the run's, handed to each verb", () => {
        assert.ok(modules.length > 10, modules.join(", "));
        const findings = modules.flatMap((m) => moduleStateFindings(m, fs.readFileSync(path.join(root, m), "utf8")));
        assert.deepEqual(findings, []);
    });

    it("allows providers/context.ts's run of this process and nothing else there", () => {
        assert.deepEqual(
            moduleStateFindings("providers/context.ts", "const thisProcess: { run?: number } = {};\nexport const f = () => (thisProcess.run ??= 1);\n"),
            [],
        );
        assert.equal(moduleStateFindings("providers/context.ts", "const other: { run?: number } = {};\nexport const f = () => (other.run = 1);\n").length, 1);
    });

    const finds = (text: string) => moduleStateFindings("providers/x.ts", text);

    it("finds a module-level let or var", () => {
        assert.match(finds("let configured: string | undefined;\n").join(), /configured: a module-level let or var/);
        assert.match(finds("var n = 0;\n").join(), /n: a module-level let or var/);
    });

    it("finds a module-level Map, Set or array that something changes", () => {
        assert.match(
            finds("const looks = new Map<string, number>();\nexport function f() { looks.set('a', 1); }\n").join(),
            /looks: a module-level const changed \(\.set\)/,
        );
        assert.match(finds("const verified = new Set<string>();\nexport function f(r: string) { verified.add(r); }\n").join(), /verified: .*\(\.add\)/);
        assert.match(finds("const seen: string[] = [];\nexport function f() { seen.push('x'); }\n").join(), /seen: .*\(\.push\)/);
        assert.match(
            finds("const byKey: Record<string, number> = {};\nexport function f(k: string) { byKey[k] = 1; }\n").join(),
            /byKey: a module-level const changed/,
        );
        assert.match(
            finds("const state = { n: 0 };\nexport function f() { delete (state as { n?: number }).n; }\n").join(),
            /state: a module-level const changed/,
        );
    });

    it("lets a module-level table nothing changes be", () => {
        assert.deepEqual(finds("const CODES = new Set(['EPIPE']);\nexport const transient = (c: string) => CODES.has(c);\n"), []);
        assert.deepEqual(finds("const FIELDS = ['a', 'b'] as const;\nexport const n = FIELDS.length;\nconst RE = new RegExp('x');\n"), []);
    });

    it("finds a module-level instance of a class (a coalescer, a pool)", () => {
        assert.match(
            finds("import { Coalescer } from './c';\nconst unitReads = new Coalescer(5, f);\n").join(),
            /unitReads: a module-level instance of Coalescer/,
        );
    });

    it("finds a mutable static field", () => {
        assert.match(finds("export class Pool { static current: Pool | undefined; }\n").join(), /Pool\.current: a mutable static field/);
        assert.match(finds("export class Pool { static readonly all = new Map(); }\n").join(), /Pool\.all: a mutable static field/);
    });

    it("finds a write to globalThis, and lets a read be", () => {
        assert.match(
            finds("export function f(p: unknown) { (globalThis as Record<symbol, unknown>)[Symbol.for('pool')] = p; }\n").join(),
            /a write to globalThis/,
        );
        assert.match(finds("export function f() { Object.assign(globalThis, { x: 1 }); }\n").join(), /a write to globalThis/);
        assert.match(
            finds("export function f(p: unknown) { const g = globalThis as unknown as Record<symbol, unknown>; g[Symbol.for('pool')] = p; }\n").join(),
            /a write to globalThis/,
        );
        assert.deepEqual(finds("export const config = () => (globalThis as { c?: string }).c ?? '';\n"), []);
    });
});
