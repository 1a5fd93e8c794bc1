import { strict as assert } from "assert";
import * as path from "path";
import { ESLint } from "eslint";
import madge from "madge";

// The layers of docs/design.md, as the lint enforces them (eslint.config.mjs),
// and the import graph without a circle (issue 35).
const repo = path.join(__dirname, "..", "..");

// One ESLint for the file's lints: each instance loads the project's config and plugins again.
let eslint: ESLint | undefined;

async function lint(file: string, text: string): Promise<string[]> {
    eslint ??= new ESLint({ cwd: repo });
    const [result] = await eslint.lintText(text, { filePath: path.join(repo, file) });
    return result!.messages.filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.message);
}

describe("the layers", () => {
    it("core/ imports no module that does I/O, at any depth of core/", async () => {
        for (const [file, text] of [
            ["core/probe.ts", 'import * as fs from "fs";\nexport const f = fs;\n'],
            ["core/box/probe.ts", 'import { execFileSync } from "node:child_process";\nexport const f = execFileSync;\n'],
            ["core/sglang/probe.ts", 'import * as net from "net";\nexport const f = net;\n'],
        ]) {
            const found = await lint(file!, text!);
            assert.equal(found.length, 1, `${file}: ${JSON.stringify(found)}`);
            assert.match(found[0]!, /core\/ is pure logic/);
        }
    });

    it("core/ imports no providers or components; remote/ no providers; providers/ no components", async () => {
        const cases: Array<[string, string, RegExp]> = [
            ["core/probe.ts", "../providers/say", /core\/ is the bottom layer/],
            ["core/box/probe.ts", "../../components/pulumi", /core\/ is the bottom layer/],
            ["core/probe.ts", "../remote/ssh-pool", /core\/ is the bottom layer/],
            ["remote/probe.ts", "../providers/say", /remote\/ is under the providers/],
            ["remote/await/probe.ts", "../../components/pulumi", /remote\/ is under the providers/],
            ["providers/probe.ts", "../components/pulumi", /providers\/ are under the components/],
        ];
        for (const [file, from, message] of cases) {
            const found = await lint(file, `import * as m from "${from}";\nexport const f = m;\n`);
            assert.equal(found.length, 1, `${file} importing ${from}: ${JSON.stringify(found)}`);
            assert.match(found[0]!, message);
        }
    });

    it("allows what the layers allow: core/ within core/, providers/ from core/ and remote/", async () => {
        assert.deepEqual(await lint("core/box/probe.ts", 'import { digest } from "../digest";\nexport const f = digest;\n'), []);
        assert.deepEqual(
            await lint("providers/probe.ts", 'import { a } from "../core/digest";\nimport { b } from "../remote/ssh-pool";\nexport const f = [a, b];\n'),
            [],
        );
        assert.deepEqual(await lint("components/probe.ts", 'import { a } from "../providers/say";\nexport const f = a;\n'), []);
    });

    it("the project's TypeScript import graph has no circle (type-only imports included)", async () => {
        const graph = await madge(repo, {
            fileExtensions: ["ts"],
            tsConfig: path.join(repo, "tsconfig.json"),
            excludeRegExp: [/^node_modules\//, /^tools\//, /^\.lab\//],
        });
        assert.deepEqual(graph.circular(), []);
        // The graph is the project's: it saw the layers' files (a wrong root would find no circle in nothing).
        const files = Object.keys(graph.obj());
        for (const f of ["index.ts", "core/config/config.ts", "providers/sglang-service.ts", "remote/ssh-pool.ts", "components/sglang-service.ts"]) {
            assert.ok(files.includes(f), `${f} is not in the graph (${files.length} files)`);
        }
    });
});
