# kbcompare with Ray and CPU torch: one image for the Ray head, its workers and the `kbc` driver.
# Built by ray-compose.yml; for GPU workers start from a CUDA image and drop the CPU wheel index.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY eval eval
COPY kb kb
COPY lm lm
COPY bridge bridge
RUN pip install --no-cache-dir --extra-index-url https://download.pytorch.org/whl/cpu ".[lm,ray]"
ENV KBC_CACHE=/cache KBC_DATA=/data/lama
