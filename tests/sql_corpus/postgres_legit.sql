-- PostgreSQL: one legitimate analytical statement per line; every one must run.
SELECT count(*) FROM patients
SELECT * FROM patients ORDER BY patient_id LIMIT 5
SELECT sex, avg(age) AS mean_age, count(*) FROM patients GROUP BY sex ORDER BY sex
SELECT t.drug, round(avg(o.died::int), 3) AS death_rate FROM treatments t JOIN outcomes o USING (admission_id) GROUP BY t.drug ORDER BY 2
WITH older AS (SELECT * FROM patients WHERE age >= 65) SELECT count(*) FROM older
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10) SELECT sum(i) FROM n
SELECT drug, count(*) FILTER (WHERE dose_mg > 400) AS high FROM treatments GROUP BY drug
SELECT patient_id, age, rank() OVER (PARTITION BY sex ORDER BY age DESC) FROM patients LIMIT 10
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY age) FROM patients
SELECT date_trunc('month', admitted_on) AS month, count(*) FROM admissions GROUP BY 1 ORDER BY 1
SELECT extract(year FROM admitted_on) AS y, count(*) FROM admissions GROUP BY y
SELECT severity, ward, count(*) FROM admissions GROUP BY ROLLUP (severity, ward) ORDER BY 1, 2
SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v(n, s)
SELECT x FROM generate_series(1, 5) AS g(x)
SELECT condition, string_agg(patient_id::text, ',') FROM comorbidities WHERE patient_id < 20 GROUP BY condition
SELECT a.severity, corr(a.severity_score, o.days_to_discharge) FROM admissions a JOIN outcomes o USING (admission_id) GROUP BY a.severity
SELECT coalesce(dose_mg, 0) AS dose, CASE WHEN dose_mg IS NULL THEN 'none' ELSE 'some' END FROM treatments LIMIT 5
SELECT patient_id FROM patients WHERE patient_id IN (SELECT patient_id FROM comorbidities WHERE condition = 'asthma') LIMIT 5
SELECT p.patient_id FROM patients p WHERE EXISTS (SELECT 1 FROM admissions a WHERE a.patient_id = p.patient_id AND a.ward = 'icu') LIMIT 5
SELECT patient_id FROM patients EXCEPT SELECT patient_id FROM comorbidities
SELECT 'it''s' AS quoted, 'a;b' AS semicolon, $$dollar;quoted$$ AS dollars
SELECT drug FROM treatments WHERE drug LIKE 'V%' OR drug ILIKE '%care' GROUP BY drug
SELECT count(*) FROM patients -- trailing comment
SELECT count(*) FROM patients;
SELECT current_setting('TimeZone'), version(), now() IS NOT NULL, pg_typeof(1)
SELECT pg_sleep(0.01)
SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = 'patients' ORDER BY ordinal_position
SELECT conname FROM pg_constraint WHERE contype = 'f' ORDER BY 1
SELECT relname FROM pg_class WHERE relname = 'patients'
SELECT age::float / 10 AS decade, age % 10 AS rest FROM patients LIMIT 3
SELECT array_agg(DISTINCT sex ORDER BY sex) FROM patients
SELECT json_build_object('n', count(*)) FROM patients
SELECT width_bucket(age, 0, 100, 10) AS bucket, count(*) FROM patients GROUP BY 1 ORDER BY 1
SELECT * FROM patients TABLESAMPLE BERNOULLI (1) REPEATABLE (7) LIMIT 3
TABLE patients
