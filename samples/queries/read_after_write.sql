-- read_after_write.sql — read-after-write matches of one run: for every
-- read, the most recent write of the same slot at or before its position
-- (a token's writes precede its reads, DESIGN.md §2).  Per head: the share of
-- reads that hit a slot already written, the share that hit a slot written
-- by the same token, and the mean distance back to the matching write.
--   ramtrace sql trace.db --file samples/queries/read_after_write.sql
-- The run: the one `ramtrace sql` is scoped to (--run N, default the latest:
-- its heads view holds only that run); in the sqlite3 shell, the latest run.
WITH run AS (SELECT max(run_id) AS id FROM heads),
ev AS (
  SELECT layer, head, slot, pos, op,
         max(CASE WHEN op = 0 THEN pos END) OVER (
           PARTITION BY layer, head, slot ORDER BY pos, op
           ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS last_write
  FROM events WHERE run_id = (SELECT id FROM run))
SELECT layer, head, count(*) AS reads,
       round(100.0 * count(last_write) / count(*), 2) AS pct_matched,
       round(100.0 * sum(last_write = pos) / count(*), 2) AS pct_same_token,
       round(avg(pos - last_write), 2) AS mean_distance
FROM ev WHERE op = 1
GROUP BY layer, head
ORDER BY layer, head;
