"""/metrics of a running subnetd, parsed by prometheus_client's text
parser (which rejects what is not the Prometheus text format): shared by
the integration tests on the simulator and the interop checks on ibsim."""
import urllib.request


def scrape(addr):
    """{(name, frozenset(labels)): value} of every sample at
    http://ADDR/metrics."""
    from prometheus_client.parser import text_string_to_metric_families
    with urllib.request.urlopen("http://%s/metrics" % addr, timeout=10) as r:
        text = r.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return samples


def value(samples, name, **labels):
    """One sample of scrape()'s result, or None."""
    return samples.get((name, frozenset(labels.items())))
