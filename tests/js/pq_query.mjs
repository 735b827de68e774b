// pq_query.mjs — run SQL statements in DuckDB (in memory) and print each
// result row as its values separated by spaces, for tests and benchmarks.
//
//   node tests/js/pq_query.mjs "SELECT ..." ...
import { DuckDBInstance } from '@duckdb/node-api';

const con = await (await DuckDBInstance.create(':memory:')).connect();
for (const sql of process.argv.slice(2))
  for (const row of (await con.runAndReadAll(sql)).getRows()) console.log(row.join(' '));
