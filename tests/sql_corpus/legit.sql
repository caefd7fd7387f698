-- One legitimate analytical statement per line: every one must be allowed and run.
SELECT * FROM patients
SELECT p.name, t.drug FROM patients p JOIN treatments t ON p.id = t.patient_id
SELECT name, age, rank() OVER (PARTITION BY city ORDER BY age DESC) AS r FROM patients
WITH old AS (SELECT * FROM patients WHERE age > 60) SELECT count(*) FROM old
SELECT * FROM patients WHERE name LIKE 'A%'
SELECT * FROM patients WHERE name ILIKE '%an%'
SELECT regexp_extract(name, '^(\w)', 1) AS initial, regexp_matches(name, 'o') FROM patients
SELECT city, avg(age), count(*) FROM patients GROUP BY city HAVING count(*) > 0
SELECT city, drug, count(*) FROM patients p JOIN treatments t ON p.id = t.patient_id GROUP BY ROLLUP (city, drug)
DESCRIBE patients
DESCRIBE SELECT name FROM patients
SUMMARIZE patients
SHOW TABLES
SHOW ALL TABLES
PRAGMA table_info('patients')
PRAGMA show_tables
PRAGMA version
CALL pragma_table_info('treatments')
SELECT 'DROP TABLE patients; DELETE FROM treatments' AS s
SELECT * FROM patients WHERE name <> ';DROP TABLE patients' -- a comment; DELETE
SELECT name, age FROM patients QUALIFY row_number() OVER (PARTITION BY city ORDER BY age) = 1
SELECT * FROM (PIVOT treatments ON drug IN ('A', 'B') USING avg(dose))
SELECT admitted + INTERVAL 7 DAY AS followup, date_diff('day', admitted, DATE '2024-01-01') AS days FROM patients
SELECT * FROM patients WHERE admitted BETWEEN DATE '2023-01-01' AND DATE '2023-12-31'
SELECT strftime(admitted, '%Y-%m') AS month, count(*) FROM patients GROUP BY ALL ORDER BY ALL
SELECT * FROM range(10)
SELECT * FROM generate_series(1, 3)
SELECT unnest([1, 2, 3]) AS x
SELECT table_name FROM information_schema.tables ORDER BY table_name
SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'patients'
SELECT table_name, estimated_size FROM duckdb_tables()
EXPLAIN SELECT * FROM patients
EXPLAIN ANALYZE SELECT count(*) FROM treatments
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT * FROM r
SELECT * FROM patients ORDER BY age DESC LIMIT 3
/* leading comment */ SELECT count(*) FROM treatments;
FROM patients SELECT name WHERE age > 30
SELECT list(name ORDER BY name) AS names, median(age), quantile_cont(age, 0.9) FROM patients
VALUES (1, 'a'), (2, 'b')
SELECT * FROM old_patients
SELECT * FROM patients p WHERE EXISTS (SELECT 1 FROM treatments t WHERE t.patient_id = p.id)
SELECT CASE WHEN age > 50 THEN 'old' ELSE 'young' END AS band, coalesce(NULL, city) FROM patients
SELECT id::VARCHAR || '-' || upper(name) AS label FROM patients
SELECT * FROM patients SEMI JOIN treatments ON id = patient_id
SELECT [x * 2 FOR x IN [1, 2, 3]] AS doubled, list_transform([1, 2], lambda y: y + 1) AS plus
SELECT current_date, current_database() IS NOT NULL AS has_db
SELECT CAST(age AS DECIMAL(10,2)) AS a, age::INT AS b, age::INTEGER AS c, TRY_CAST(name AS BIGINT) AS d FROM patients
SELECT name::TEXT AS t, CAST(name AS VARCHAR(20)) AS v, admitted::TIMESTAMP AS ts, CAST(admitted AS DATE) AS d FROM patients
SELECT '2024-01-01 10:00'::TIMESTAMP WITH TIME ZONE AS tz, INTERVAL '2 days' AS i, '1 hour'::INTERVAL AS j, 'ab'::BLOB AS b
SELECT gen_random_uuid()::UUID IS NOT NULL AS u, 1::HUGEINT AS h, 'true'::BOOLEAN AS bo, 1::DOUBLE AS d, 1::FLOAT AS f, 1::DOUBLE PRECISION AS dp
SELECT [1, 2]::VARCHAR[] AS l, [1, 2]::INTEGER[2] AS arr, CAST([[1]] AS BIGINT[][]) AS l2
SELECT {'a': 1, 'b': 'x'}::STRUCT(a BIGINT, b VARCHAR) AS s, MAP {'k': 1}::MAP(VARCHAR, INTEGER) AS m
SELECT CAST(outcome AS ENUM('recovered', 'died')) AS o, TRY_CAST('{"a": 1}' AS JSON) AS j FROM treatments
SELECT age::NUMERIC(5, 1) AS n, age::SMALLINT AS s, age::UBIGINT AS u, DATE '2024-02-01' - admitted AS days FROM patients
SELECT from_json('{"a": 1, "b": [2]}', '{"a": "INTEGER", "b": ["BIGINT"]}') AS j, json_transform('[1]', '["DOUBLE"]') AS k
