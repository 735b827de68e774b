-- slot_utilisation.sql — per-head slot utilisation of one run: how many
-- of the M slots were ever written, and the share of all write weight that
-- lands on the head's 1% most-written slots.
--   ramtrace sql trace.db --file samples/queries/slot_utilisation.sql
-- The run: the one `ramtrace sql` is scoped to (--run N, default the latest:
-- its heads view holds only that run); in the sqlite3 shell, the latest run.
WITH run AS (SELECT max(run_id) AS id FROM heads),
per_slot AS (
  SELECT layer, head, slot, count(*) AS writes, sum(weight) AS w
  FROM writes WHERE run_id = (SELECT id FROM run)
  GROUP BY layer, head, slot),
ranked AS (
  SELECT *, row_number() OVER (PARTITION BY layer, head ORDER BY w DESC) AS rk
  FROM per_slot)
SELECT r.layer, r.head, h.cape, count(*) AS slots_used, h.n_slots,
       round(100.0 * count(*) / h.n_slots, 2) AS pct_used,
       sum(r.writes) AS writes,
       round(100.0 * sum(CASE WHEN r.rk <= max(1, h.n_slots / 100) THEN r.w END) / sum(r.w), 2)
         AS pct_weight_top1pct
FROM ranked AS r
JOIN heads AS h ON h.run_id = (SELECT id FROM run) AND h.layer = r.layer AND h.head = r.head
GROUP BY r.layer, r.head
ORDER BY r.layer, r.head;
