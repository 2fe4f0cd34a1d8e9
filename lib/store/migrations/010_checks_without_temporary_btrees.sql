-- A CHECK (x IN ('a', 'b', 'c')) makes SQLite build a temporary B-tree of the list each time a
-- statement writes the table (lists of three values or more): a B-tree opened, a zeroed page, the
-- values inserted, all freed, on every batch's INSERT into holds, the journal and the history and
-- on every hold's UPDATE, about 10,000 instructions each (callgrind, the writer thread). The same
-- constraints written as comparisons cost nothing of the kind.
--
-- Changed in place in sqlite_schema, the procedure SQLite documents for changing CHECK constraints
-- (https://www.sqlite.org/lang_altertable.html, "Making Other Kinds Of Table Schema Changes"): the
-- new constraints accept exactly the values the old ones did, so every row still satisfies them and
-- no table is rebuilt (the history may hold millions of rows). The runner turns SQLite's defensive
-- mode off while migrating so that sqlite_schema can be written; RESET reloads this connection's
-- schema, and the table created and dropped after it moves the schema cookie, so that other
-- connections reload theirs.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql,
  'CHECK (status IN (''open'', ''settled'', ''released''))',
  'CHECK (status = ''open'' OR status = ''settled'' OR status = ''released'')')
  WHERE type = 'table' AND name = 'holds';
UPDATE sqlite_schema SET sql = replace(sql,
  'CHECK (kind IN (''grant'', ''topup'', ''charge'', ''adjustment''))',
  'CHECK (kind = ''grant'' OR kind = ''topup'' OR kind = ''charge'' OR kind = ''adjustment'')')
  WHERE type = 'table' AND name = 'journal';
UPDATE sqlite_schema SET sql = replace(sql,
  'CHECK (status IN (''ok'', ''error'', ''client_gone''))',
  'CHECK (status = ''ok'' OR status = ''error'' OR status = ''client_gone'')')
  WHERE type = 'table' AND name = 'request_history';
PRAGMA writable_schema = RESET;
CREATE TABLE schema_cookie_bump (x);
DROP TABLE schema_cookie_bump;
