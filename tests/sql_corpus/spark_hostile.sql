-- Spark SQL: one hostile statement per line; every one must be refused with UnsafeSQLError.
INSERT INTO patients VALUES (99999, 70, 'F')
INSERT OVERWRITE TABLE patients SELECT * FROM patients
INSERT OVERWRITE DIRECTORY '/tmp/d2-out' SELECT * FROM patients
INSERT OVERWRITE LOCAL DIRECTORY '/tmp/d2-out' STORED AS TEXTFILE SELECT 1
DELETE FROM patients
UPDATE patients SET age = 0
MERGE INTO patients p USING patients q ON p.patient_id = q.patient_id WHEN MATCHED THEN DELETE
DROP TABLE patients
DROP VIEW patients
CREATE TABLE z AS SELECT 1
CREATE TEMPORARY VIEW z AS SELECT 1
CREATE OR REPLACE TEMP VIEW patients AS SELECT 1 AS patient_id
CREATE TEMPORARY VIEW f USING csv OPTIONS (path '/etc/passwd')
CREATE FUNCTION f AS 'com.example.Evil'
CREATE DATABASE d2
ALTER TABLE patients RENAME TO p2
ALTER VIEW patients AS SELECT 1
TRUNCATE TABLE patients
CACHE TABLE patients
CACHE LAZY TABLE c AS SELECT 1
UNCACHE TABLE patients
CLEAR CACHE
REFRESH TABLE patients
REFRESH '/tmp'
MSCK REPAIR TABLE patients
ANALYZE TABLE patients COMPUTE STATISTICS
LOAD DATA LOCAL INPATH '/etc/passwd' INTO TABLE patients
ADD JAR /tmp/evil.jar
ADD FILE /etc/passwd
ADD ARCHIVE /tmp/x.zip
LIST FILES
SET spark.sql.ansi.enabled = false
SET spark.sql.warehouse.dir=/tmp
RESET
USE other_db
SHOW TABLES
SHOW CREATE TABLE patients
EXPLAIN SELECT 1
SELECT reflect('java.lang.Runtime', 'getRuntime')
SELECT java_method('java.lang.System', 'getenv', 'HOME')
SELECT try_reflect('java.lang.Thread', 'sleep', 100000L)
SELECT * FROM csv.`/etc/passwd`
SELECT * FROM parquet.`/tmp`
SELECT * FROM text.`/etc/shadow`
SELECT * FROM json.`file:///etc/passwd`
SELECT * FROM orc.`/tmp/x`
SELECT * FROM binaryFile.`/etc`
SELECT * FROM delta.`/tmp/table`
SELECT * FROM `/tmp/data.parquet`
SELECT * FROM read_files('/etc/passwd')
SELECT input_file_name() FROM patients
SELECT TRANSFORM(patient_id) USING 'cat /etc/passwd' AS (x) FROM patients
SELECT * FROM patients; DROP TABLE patients
SELECT 1; SELECT 2
/* only a comment */
