-- Spark SQL: models, secrets and XML parsers. "<fragment the refusal names> ||| <statement>".
it calls a model or service ||| SELECT ai_query('databricks-meta-llama', 'Summarise: ' || sex) FROM patients
it calls a model or service ||| SELECT ai_gen('Write a poem about ' || drug) FROM treatments
it calls a model or service ||| SELECT ai_summarize(string(patient_id)) FROM patients
it calls a model or service ||| SELECT ai_classify(sex, array('F', 'M')) FROM patients
it calls a model or service ||| SELECT ai_extract('x', array('name'))
it calls a model or service ||| SELECT ai_mask('x', array('email'))
it calls a model or service ||| SELECT ai_translate('hola', 'en')
it calls a model or service ||| SELECT ai_similarity('a', 'b')
it calls a model or service ||| SELECT ai_analyze_sentiment('great')
it calls a model or service ||| SELECT ai_fix_grammar('x'), ai_forecast(1)
it calls a model or service ||| SELECT `ai_query`('m', 'p')
it calls a model or service ||| SELECT AI_QUERY('m', 'p')
it calls a model or service ||| SELECT (SELECT ai_query('m', 'p')) AS x
it calls a model or service ||| WITH q AS (SELECT ai_gen('x') AS g) SELECT * FROM q
it reads secrets ||| SELECT try_secret('scope', 'key')
it reads secrets ||| SELECT secret('scope', 'key')
it reads secrets ||| SELECT TRY_SECRET('scope', 'key') AS s
it reads secrets ||| SELECT length(try_secret('scope', 'key')) FROM patients
it parses XML ||| SELECT xpath_string('<!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/passwd">]><a>&x;</a>', '/a')
it parses XML ||| SELECT xpath('<a><b>1</b></a>', 'a/b/text()')
it parses XML ||| SELECT xpath_int('<a>1</a>', 'a'), xpath_long('<a>1</a>', 'a')
it parses XML ||| SELECT xpath_boolean('<a/>', 'a'), xpath_double('<a>1</a>', 'a')
it parses XML ||| SELECT xpath_number('<a>1</a>', 'a'), xpath_float('<a>1</a>', 'a'), xpath_short('<a>1</a>', 'a')
it parses XML ||| SELECT from_xml('<!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/passwd">]><p><a>&x;</a></p>', 'a STRING')
it parses XML ||| SELECT schema_of_xml('<p><a>1</a></p>')
it parses XML ||| SELECT XPATH_STRING(sex, '/a') FROM patients
it reveals file paths ||| SELECT input_file_name() FROM patients
it calls arbitrary Java methods ||| SELECT reflect('java.lang.System', 'getenv', 'AWS_SECRET_ACCESS_KEY')
it reaches the network ||| SELECT http_request('GET', 'http://169.254.169.254/latest/meta-data/')
