-- reuse_intervals.sql — slot reuse intervals of one run: for each
-- (layer, head, slot), the distance in positions between successive accesses
-- (reads and writes alike, LAG over the slot's accesses), bucketed by powers
-- of two per head.  Short intervals mean a small working set (cache-friendly).
--   ramtrace sql trace.db --file samples/queries/reuse_intervals.sql
-- The run: the one `ramtrace sql` is scoped to (--run N, default the latest:
-- its heads view holds only that run); in the sqlite3 shell, the latest run.
WITH run AS (SELECT max(run_id) AS id FROM heads),
acc AS (  -- one access per (slot, pos): a token may read and write one slot
  SELECT DISTINCT layer, head, slot, pos FROM events WHERE run_id = (SELECT id FROM run)),
gaps AS (
  SELECT layer, head, pos - lag(pos) OVER (PARTITION BY layer, head, slot ORDER BY pos) AS gap
  FROM acc)
SELECT layer, head,
       CASE WHEN gap < 2 THEN '1' WHEN gap < 4 THEN '2-3' WHEN gap < 16 THEN '4-15'
            WHEN gap < 64 THEN '16-63' WHEN gap < 256 THEN '64-255'
            WHEN gap < 1024 THEN '256-1023' ELSE '1024+' END AS interval,
       count(*) AS reuses,
       round(100.0 * count(*) / sum(count(*)) OVER (PARTITION BY layer, head), 2) AS pct
FROM gaps WHERE gap IS NOT NULL
GROUP BY layer, head, interval
ORDER BY layer, head, min(gap);
