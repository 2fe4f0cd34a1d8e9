-- Model aliases (config models[].aliases): a request may name its model by another id. model keeps
-- the model's own id (the one that served; filters and totals by model use it), requested_model the
-- alias the client sent, NULL when it sent the model's own id.
ALTER TABLE request_history ADD COLUMN requested_model TEXT;
