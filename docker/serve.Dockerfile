# The explorer (`kbc serve`) with the CPU build of torch. Built by docker-compose.yml (service kbc-serve):
#   docker compose -f docker/docker-compose.yml up -d kbc-serve
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY eval eval
COPY kb kb
COPY lm lm
COPY bridge bridge
RUN pip install --no-cache-dir --extra-index-url https://download.pytorch.org/whl/cpu ".[lm,text,re,reason,serve]"
ENV KBC_CACHE=/cache KBC_DATA=/data/lama
EXPOSE 8000
CMD ["kbc", "serve", "--host", "0.0.0.0", "--port", "8000", "--predictors", "freq", "re-oracle"]
