// pq_dataset.mjs — check a dataset of `ramtrace export --format parquet`
// against `ramtrace stats`: samples/queries/parquet_stats.sql run by DuckDB
// over the dataset must give stats' numbers for every head of every run,
// and hyparquet must read every file of the dataset with the same counts.
//
//   node tests/js/pq_dataset.mjs DATASET SQLFILE RUN=STATS.csv...
//
// STATS.csv: `ramtrace stats TRACE.db --run ID -f csv` of the trace run
// that is dataset run RUN.  Counts must be equal; shares and entropies
// equal to the 6 significant digits stats prints.  One line; exit 1 on
// the first difference.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { DuckDBInstance } from '@duckdb/node-api';

const [dir, sqlFile, ...pairs] = process.argv.slice(2);
function fail(msg) {
  console.log(`pq_dataset ${dir}: ${msg}`);
  process.exit(1);
}

const expected = new Map();  // "run/layer/head" -> stats row
let total = 0;
for (const p of pairs) {
  const [run, csv] = p.split('=');
  const lines = readFileSync(csv, 'utf8').trim().split('\n');
  const hdr = lines[0].split(',');
  for (const l of lines.slice(1)) {
    const v = l.split(','), row = {};
    hdr.forEach((h, i) => { row[h] = v[i]; });
    expected.set(`${run}/${row.layer}/${row.head}`, row);
    total += Number(row.events);
  }
}

const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
const sql = readFileSync(sqlFile, 'utf8').replaceAll('DATASET', dir.replaceAll("'", "''"));
const got = (await con.runAndReadAll(sql)).getRowObjects();
if (got.length !== expected.size) fail(`the query gives ${got.length} heads, stats ${expected.size}`);
const exact = ['events', 'writes', 'reads', 'distinct', 'warm_reads', 'cold_reads'];
const close = ['used_share', 'entropy_bits', 'hot1_share'];
for (const g of got) {
  const key = `${g.run}/${g.layer}/${g.head}`, want = expected.get(key);
  if (!want) fail(`the query gives head ${key}, stats has none`);
  for (const c of exact)
    if (BigInt(g[c]) !== BigInt(want[c])) fail(`${key} ${c}: query ${g[c]}, stats ${want[c]}`);
  for (const c of close) {
    const a = Number(g[c]), b = Number(want[c]);
    if (!(Math.abs(a - b) <= 5e-6 * Math.max(Math.abs(b), 1e-300))) fail(`${key} ${c}: query ${a}, stats ${b}`);
  }
}

// DuckDB: the benchmark's query over the partitions
const grp = (await con.runAndReadAll(
  `SELECT run, layer, head, count(*) AS n FROM read_parquet('${dir}/events/*/*/*.parquet', hive_partitioning = true) GROUP BY layer, head, run`)).getRowObjects();
for (const g of grp)
  if (BigInt(g.n) !== BigInt(expected.get(`${g.run}/${g.layer}/${g.head}`)?.events ?? -1)) fail(`GROUP BY: ${g.run}/${g.layer}/${g.head} has ${g.n}`);

// hyparquet: every file, and the runs table
let rows = 0;
const perHead = new Map();
for (const r of readdirSync(join(dir, 'events')))
  for (const l of readdirSync(join(dir, 'events', r))) {
    const file = await asyncBufferFromFile(join(dir, 'events', r, l, 'part-0.parquet'));
    const ev = await parquetReadObjects({ file, compressors, columns: ['head', 'op'] });
    rows += ev.length;
    for (const e of ev) {
      const k = `${r.slice(4)}/${l.slice(6)}/${e.head}`;
      perHead.set(k, (perHead.get(k) || 0) + 1);
    }
  }
if (rows !== total) fail(`hyparquet reads ${rows} events, stats counts ${total}`);
for (const [k, n] of perHead) if (n !== Number(expected.get(k)?.events)) fail(`hyparquet: head ${k} has ${n} events`);
const runs = await parquetReadObjects({ file: await asyncBufferFromFile(join(dir, 'runs', 'runs.parquet')), compressors });
if (runs.length !== pairs.length) fail(`runs table has ${runs.length} rows, expected ${pairs.length}`);
for (const r of runs) {
  let n = 0;
  for (const [k, v] of expected) if (k.startsWith(`${r.run}/`)) n += Number(v.events);
  if (Number(r.n_events) !== n) fail(`runs table: run ${r.run} has n_events ${r.n_events}, stats ${n}`);
}
console.log(`pq_dataset ${dir}: ${expected.size} heads of ${pairs.length} runs equal to stats (duckdb), ${rows} events (hyparquet)`);
