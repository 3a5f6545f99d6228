"""RDF-to-text generation on WebNLG: data, models, decoding and evaluation."""
