-- hottest_slots.sql — the 20 most-read (layer, head, slot) triples of one
-- run, with their read weight and how often they were written.
--   ramtrace sql trace.db --file samples/queries/hottest_slots.sql
-- The run: the one `ramtrace sql` is scoped to (--run N, default the latest:
-- its heads view holds only that run); in the sqlite3 shell, the latest run.
WITH run AS (SELECT max(run_id) AS id FROM heads),
r AS (
  SELECT layer, head, slot, count(*) AS reads, sum(weight) AS read_weight
  FROM reads WHERE run_id = (SELECT id FROM run)
  GROUP BY layer, head, slot
  ORDER BY reads DESC
  LIMIT 20),
w AS (
  SELECT layer, head, slot, count(*) AS writes
  FROM writes WHERE run_id = (SELECT id FROM run)
  GROUP BY layer, head, slot)
SELECT r.layer, r.head, r.slot, r.reads, round(r.read_weight, 4) AS read_weight,
       coalesce(w.writes, 0) AS writes
FROM r LEFT JOIN w USING (layer, head, slot)
ORDER BY r.reads DESC, r.layer, r.head, r.slot;
